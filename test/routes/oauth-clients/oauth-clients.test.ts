import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { clientSecretHash } from '../../../src/security/client-secrets.js'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { clockPast } from '../../helpers/clock.js'
import { backends } from '../../helpers/database.js'

/** OAuth clients through the API (docs/api.md, "OAuth clients"). */

const UNKNOWN_ID = 'AAAAAAAAAAAAAAAAAAAAAA'
/** The scopes the tests' machine clients may be given (AUTHORIZATION_SERVER_SCOPES). */
const SERVICE_SCOPES = 'reports.read,api:write,b_2-x,api.read'
const WEB_APP = {
  name: 'Acme Dashboard',
  redirect_uris: ['https://app.example.com/callback'],
  post_logout_redirect_uris: ['https://app.example.com/'],
  grant_types: ['authorization_code', 'refresh_token'],
  scopes: ['openid', 'profile', 'email', 'offline_access']
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'

async function as (app: FastifyInstance, account: Account, method: Method, url: string, payload?: object) {
  return await app.inject(withToken(account.token, { method, url, ...(payload !== undefined && { payload }) }))
}

async function artifact (app: FastifyInstance, model: string, id: string, clientId: string | null) {
  await app.database.db.insertInto('authorization_artifacts').values({
    model,
    id,
    payload: JSON.stringify({ clientId }),
    grant_id: null,
    user_code: null,
    uid: null,
    account_id: null,
    client_id: clientId,
    expires_at: null
  }).execute()
}

async function clientCount (app: FastifyInstance): Promise<number> {
  const row = await app.database.db.selectFrom('oauth_clients').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}

async function artifactIds (app: FastifyInstance): Promise<string[]> {
  return (await app.database.db.selectFrom('authorization_artifacts').select('id').orderBy('id').execute()).map((row) => row.id)
}

for (const backend of backends()) {
  t.test(`OAuth clients through the API (${backend.name})`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url, env: { AUTHORIZATION_SERVER_SCOPES: SERVICE_SCOPES } })
    const operator = await createAccount(app, { roles: ['super_admin'] })
    const create = async (payload: object = WEB_APP) => await as(app, operator, 'POST', '/api/v1/oauth-clients', payload)

    t.test('only a holder of the admin permission manages clients; without a token, 401', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const id = (await create()).json().data.id
      const operations: Array<[Method, string, object?]> = [
        ['POST', '/api/v1/oauth-clients', WEB_APP],
        ['GET', '/api/v1/oauth-clients'],
        ['GET', `/api/v1/oauth-clients/${id}`],
        ['PATCH', `/api/v1/oauth-clients/${id}`, { name: 'Taken over' }],
        ['POST', `/api/v1/oauth-clients/${id}/secret`],
        ['DELETE', `/api/v1/oauth-clients/${id}`]
      ]
      for (const [method, url, payload] of operations) {
        for (const account of [admin, user]) {
          const refused = await as(app, account, method, url, payload)
          t.equal(refused.statusCode, 403, `${method} ${url}`)
          t.equal(refused.json().error.code, 'FORBIDDEN')
        }
        const anonymous = await app.inject({ method, url, ...(payload !== undefined && { payload }) })
        t.equal(anonymous.statusCode, 401, `${method} ${url} without a token`)
        t.equal(anonymous.json().error.code, 'MISSING_TOKEN')
      }
      t.same((await as(app, operator, 'GET', `/api/v1/oauth-clients/${id}`)).json().data.name, WEB_APP.name, 'unchanged')
    })

    t.test('create, read, list, change, rotate and delete; the secret in the creation\'s and rotation\'s answers only, never its hash', async (t) => {
      const created = await create()
      t.equal(created.statusCode, 201)
      const client = created.json().data
      t.equal(created.headers.location, `/api/v1/oauth-clients/${client.id}`)
      t.match(client.id, /^[A-Za-z0-9_-]{22}$/)
      t.match(client.client_secret, /^[A-Za-z0-9_-]{43}$/)
      t.match(client, { ...WEB_APP, confidential: true, disabled: false, created_at: /Z$/, updated_at: /Z$/ })
      const stored = await app.repositories.oauthClients.findById(client.id)
      t.equal(stored?.secret_hash, clientSecretHash(client.client_secret), 'only the hash is stored')
      t.equal(stored?.created_by, operator.id)
      const hash = stored?.secret_hash ?? ''
      t.notOk(created.body.includes(hash), 'the hash is not in the answer')

      const read = await as(app, operator, 'GET', `/api/v1/oauth-clients/${client.id}`)
      t.equal(read.statusCode, 200)
      t.notOk('client_secret' in read.json().data, 'never shown again')
      t.same(Object.keys(read.json().data).sort(), [
        'confidential', 'created_at', 'disabled', 'grant_types', 'id', 'id_token_signed_response_alg', 'name', 'post_logout_redirect_uris',
        'redirect_uris', 'scopes', 'updated_at'
      ])
      t.equal(read.json().data.id_token_signed_response_alg, 'RS256', 'ID tokens in RS256 unless the client chose another')
      const later = (await create({ ...WEB_APP, name: 'Later App' })).json().data
      const listed = await as(app, operator, 'GET', '/api/v1/oauth-clients?limit=100')
      t.equal(listed.statusCode, 200)
      const ids = listed.json().data.map((item: { id: string }) => item.id)
      t.ok(ids.indexOf(later.id) < ids.indexOf(client.id), 'newest first')
      t.match(listed.json().meta, { kind: 'offset' })
      const cursorPage = await as(app, operator, 'GET', '/api/v1/oauth-clients?cursor=&limit=1&fields=name')
      t.match(cursorPage.json(), { data: [{ id: ids[0] }], meta: { kind: 'cursor', hasMore: true } })
      const nextPage = await as(app, operator, 'GET', `/api/v1/oauth-clients?limit=1&fields=name&cursor=${encodeURIComponent(cursorPage.json().meta.nextCursor)}`)
      t.equal(nextPage.statusCode, 200, nextPage.body)
      t.same(nextPage.json().data.map((item: { id: string }) => item.id), [ids[1]], 'the cursor goes on in the same order')
      for (const answer of [read, listed, cursorPage]) {
        t.notOk(answer.body.includes(client.client_secret), 'no secret')
        t.notOk(answer.body.includes(hash), 'no hash')
        t.notOk(answer.body.includes('client_secret'))
      }

      const changed = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${client.id}`, {
        name: 'Acme Dashboard 2', redirect_uris: ['https://app.example.com/callback', 'http://127.0.0.1:8080/callback']
      })
      t.equal(changed.statusCode, 200)
      t.match(changed.json().data, { name: 'Acme Dashboard 2', redirect_uris: ['https://app.example.com/callback', 'http://127.0.0.1:8080/callback'], scopes: WEB_APP.scopes })
      t.notOk(changed.body.includes('client_secret'))

      const rotated = await as(app, operator, 'POST', `/api/v1/oauth-clients/${client.id}/secret`)
      t.equal(rotated.statusCode, 200)
      const secret = rotated.json().data.client_secret
      t.match(secret, /^[A-Za-z0-9_-]{43}$/)
      t.not(secret, client.client_secret)
      const rotatedHash = (await app.repositories.oauthClients.findById(client.id))?.secret_hash
      t.equal(rotatedHash, clientSecretHash(secret), 'the new secret is the one that works')
      t.not(rotatedHash, clientSecretHash(client.client_secret), 'the previous one stops working at once')
      t.notOk(rotated.body.includes(rotatedHash ?? ''))

      t.equal((await as(app, operator, 'DELETE', `/api/v1/oauth-clients/${client.id}`)).statusCode, 204)
      t.equal((await as(app, operator, 'GET', `/api/v1/oauth-clients/${client.id}`)).statusCode, 404)
      t.equal(await app.repositories.oauthClients.findById(client.id), undefined)
      t.equal((await as(app, operator, 'DELETE', `/api/v1/oauth-clients/${client.id}`)).statusCode, 204, 'deleting again succeeds')
    })

    t.test('an unknown id is a 404 NOT_FOUND; a malformed one a 400', async (t) => {
      for (const [method, url, payload] of [
        ['GET', `/api/v1/oauth-clients/${UNKNOWN_ID}`],
        ['PATCH', `/api/v1/oauth-clients/${UNKNOWN_ID}`, { name: 'Nobody' }],
        ['POST', `/api/v1/oauth-clients/${UNKNOWN_ID}/secret`]
      ] as Array<[Method, string, object?]>) {
        const response = await as(app, operator, method, url, payload)
        t.equal(response.statusCode, 404, `${method} ${url}`)
        t.same(response.json().error, { code: 'NOT_FOUND', message: 'OAuth client not found' })
      }
      const malformed = await as(app, operator, 'GET', '/api/v1/oauth-clients/not-a-client')
      t.equal(malformed.statusCode, 400)
      t.equal(malformed.json().error.code, 'VALIDATION_FAILED')
    })

    t.test('a public client has no secret: none at its creation, and its rotation is a 409', async (t) => {
      const created = await create({
        name: 'Acme Mobile', confidential: false, redirect_uris: ['com.example.app:/callback', 'http://[::1]/callback'], grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid']
      })
      t.equal(created.statusCode, 201)
      t.match(created.json().data, { confidential: false, client_secret: null })
      t.equal((await app.repositories.oauthClients.findById(created.json().data.id))?.secret_hash, null)
      const rotated = await as(app, operator, 'POST', `/api/v1/oauth-clients/${created.json().data.id}/secret`)
      t.equal(rotated.statusCode, 409)
      t.same(rotated.json().error, { code: 'CONFLICT', message: 'A public client has no secret to rotate' })
    })

    t.test('clients the rules accept', async (t) => {
      const accepted = [
        { name: 'Loopback', redirect_uris: ['http://127.0.0.1:53682/callback', 'http://localhost:3000/cb', 'http://[::1]:8080/cb'], grant_types: ['authorization_code'], scopes: ['openid'] },
        { name: 'Native', confidential: false, redirect_uris: ['com.example.app:/oauth2redirect'], grant_types: ['authorization_code'], scopes: ['openid', 'profile'] },
        { name: 'TV', confidential: false, redirect_uris: [], grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], scopes: ['openid', 'offline_access'] },
        { name: 'Worker', redirect_uris: [], grant_types: ['client_credentials'], scopes: ['reports.read', 'api:write', 'b_2-x'] }
      ]
      for (const payload of accepted) {
        const response = await create(payload)
        t.equal(response.statusCode, 201, `${payload.name}: ${response.body}`)
        t.match(response.json().data, { ...payload, post_logout_redirect_uris: [] })
      }
    })

    t.test('every rule refuses with 400 VALIDATION_FAILED, its detail at the offending field', async (t) => {
      const before = await clientCount(app)
      const long = (count: number, make: (index: number) => string) =>
        Array.from({ length: count }, (_, index) => make(index))
      const cases: Array<[string, object, string, RegExp?]> = [
        ['authorization_code without a redirect URI', { redirect_uris: [] }, '/redirect_uris', /needs at least one redirect URI/],
        ['refresh_token alone', { grant_types: ['refresh_token'] }, '/grant_types', /refresh_token needs authorization_code or/],
        ['refresh_token with client_credentials only', { grant_types: ['client_credentials', 'refresh_token'], scopes: ['api.read'] }, '/grant_types', /refresh_token needs/],
        ['client_credentials for a public client', { confidential: false, grant_types: ['client_credentials'], scopes: ['api.read'] }, '/grant_types', /only for a confidential client/],
        ['http to a host that is not loopback', { redirect_uris: ['http://app.example.com/callback'] }, '/redirect_uris/0', /loopback/],
        ['http to a name that only starts like loopback', { redirect_uris: ['http://localhost.evil.example/cb'] }, '/redirect_uris/0', /loopback/],
        ['a fragment', { redirect_uris: ['https://app.example.com/callback#done'] }, '/redirect_uris/0', /fragment/],
        ['a relative URI', { redirect_uris: ['/callback'] }, '/redirect_uris/0'],
        ['javascript:', { redirect_uris: ['javascript:alert(1)'] }, '/redirect_uris/0', /scheme javascript: is not accepted/],
        ['data:', { redirect_uris: ['data:text/html,<script>alert(1)</script>'] }, '/redirect_uris/0'],
        ['user info', { redirect_uris: ['https://user:pass@app.example.com/callback'] }, '/redirect_uris/0', /user name or password/],
        ['user info in a private-use URI', { redirect_uris: ['com.example.app://user@callback/'] }, '/redirect_uris/0', /user name or password/],
        ['a private-use scheme without a dot', { redirect_uris: ['myapp:/callback'] }, '/redirect_uris/0', /private-use scheme with a dot/],
        ['a space in a URI', { redirect_uris: ['https://app.example.com/call back'] }, '/redirect_uris/0'],
        ['a bad post-logout URI', { post_logout_redirect_uris: ['http://app.example.com/'] }, '/post_logout_redirect_uris/0', /loopback/],
        ['a second bad URI is named by its index', { redirect_uris: ['https://app.example.com/cb', 'file:///etc/passwd'] }, '/redirect_uris/1'],
        ['more than 10 redirect URIs', { redirect_uris: long(11, (index) => `https://app.example.com/${index}`) }, '/redirect_uris'],
        ['a redirect URI twice', { redirect_uris: ['https://app.example.com/cb', 'https://app.example.com/cb'] }, '/redirect_uris'],
        ['more than 10 post-logout URIs', { post_logout_redirect_uris: long(11, (index) => `https://app.example.com/${index}`) }, '/post_logout_redirect_uris'],
        ['an unknown grant type', { grant_types: ['password'] }, '/grant_types/0'],
        ['no grant type', { grant_types: [] }, '/grant_types'],
        ['a grant type twice', { grant_types: ['authorization_code', 'authorization_code'] }, '/grant_types'],
        ['no scope', { scopes: [] }, '/scopes'],
        ['a scope twice', { scopes: ['openid', 'openid'] }, '/scopes'],
        ['more than 20 scopes', { grant_types: ['client_credentials'], redirect_uris: [], scopes: long(21, (index) => `s${index}`) }, '/scopes'],
        ['a scope in upper case', { scopes: ['OpenID'] }, '/scopes/0'],
        ['a scope with a space', { scopes: ['openid profile'] }, '/scopes/0'],
        ['a scope over 64 characters', { grant_types: ['client_credentials'], scopes: [`a${'b'.repeat(64)}`] }, '/scopes/0'],
        ['a custom scope for a client without client_credentials', { scopes: ['openid', 'reports.read'] }, '/scopes/1', /custom scope/],
        ['a scope AUTHORIZATION_SERVER_SCOPES does not list', { grant_types: ['client_credentials'], redirect_uris: [], scopes: ['reports.write'] }, '/scopes/0', /not a scope of this service/],
        ['an empty name', { name: '' }, '/name'],
        ['a name over 100 characters', { name: 'x'.repeat(101) }, '/name'],
        ['a control character in the name', { name: 'Acme\nDashboard' }, '/name'],
        ['a secret of one\'s choosing', { client_secret: 'mine' }, '/client_secret']
      ]
      for (const [label, change, path, message] of cases) {
        const response = await create({ ...WEB_APP, ...change })
        t.equal(response.statusCode, 400, `${label}: ${response.body}`)
        const { error } = response.json()
        t.equal(error.code, 'VALIDATION_FAILED', label)
        const detail = error.details?.find((item: { path: string }) => item.path === path)
        t.ok(detail, `${label}: a detail at ${path} (${JSON.stringify(error.details)})`)
        if (message !== undefined) t.match(detail?.message, message, label)
      }
      t.equal(await clientCount(app), before, 'none was stored')
    })

    t.test('a change is held to the same rules, on the client it would leave', async (t) => {
      const client = (await create()).json().data
      const machine = (await create({ name: 'Worker', redirect_uris: [], grant_types: ['client_credentials'], scopes: ['reports.read'] })).json().data
      const cases: Array<[string, string, object, string]> = [
        ['removing the last redirect URI of an authorization_code client', client.id, { redirect_uris: [] }, '/redirect_uris'],
        ['leaving refresh_token without authorization_code', client.id, { grant_types: ['refresh_token'] }, '/grant_types'],
        ['a bad redirect URI', client.id, { redirect_uris: ['http://evil.example.com/cb'] }, '/redirect_uris/0'],
        ['taking client_credentials from a client with custom scopes', machine.id, { grant_types: ['authorization_code'], redirect_uris: ['https://w.example.com/cb'] }, '/scopes/0'],
        ['adding authorization_code with no redirect URI', machine.id, { grant_types: ['client_credentials', 'authorization_code'] }, '/redirect_uris'],
        ['turning a client public', client.id, { confidential: false }, '/confidential']
      ]
      for (const [label, id, change, path] of cases) {
        const response = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${id}`, change)
        t.equal(response.statusCode, 400, `${label}: ${response.body}`)
        t.equal(response.json().error.code, 'VALIDATION_FAILED')
        t.ok(response.json().error.details?.some((item: { path: string }) => item.path === path), `${label}: at ${path} (${response.body})`)
      }
      t.same((await as(app, operator, 'GET', `/api/v1/oauth-clients/${client.id}`)).json().data.redirect_uris, WEB_APP.redirect_uris, 'nothing changed')
      const fixed = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${machine.id}`, {
        grant_types: ['client_credentials', 'authorization_code'], redirect_uris: ['https://w.example.com/cb']
      })
      t.equal(fixed.statusCode, 200, 'together, the same changes are a sound client')
    })

    t.test('disabling or deleting a client removes its codes, tokens and consents, and no other client\'s', async (t) => {
      const first = (await create({ ...WEB_APP, name: 'First' })).json().data
      const second = (await create({ ...WEB_APP, name: 'Second' })).json().data
      const third = (await create({ ...WEB_APP, name: 'Third' })).json().data
      const before = await artifactIds(app)
      await artifact(app, 'AuthorizationCode', 'first-code', first.id)
      await artifact(app, 'Grant', 'first-grant', first.id)
      await artifact(app, 'AccessToken', 'second-token', second.id)
      await artifact(app, 'RefreshToken', 'second-refresh', second.id)
      await artifact(app, 'Grant', 'third-grant', third.id)
      await artifact(app, 'Session', 'a-session', null)

      const disabled = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${first.id}`, { disabled: true })
      t.equal(disabled.statusCode, 200)
      t.equal(disabled.json().data.disabled, true)
      t.same(await artifactIds(app), [...before, 'a-session', 'second-refresh', 'second-token', 'third-grant'].sort(), 'the disabled client\'s rows went')
      t.not((await app.repositories.oauthClients.findById(first.id))?.disabled_at, null, 'the authorization server reads it as disabled')
      const enabled = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${first.id}`, { disabled: false })
      t.equal(enabled.json().data.disabled, false)
      t.equal((await app.repositories.oauthClients.findById(first.id))?.disabled_at, null)

      t.equal((await as(app, operator, 'DELETE', `/api/v1/oauth-clients/${second.id}`)).statusCode, 204)
      t.same(await artifactIds(app), [...before, 'a-session', 'third-grant'].sort(), 'the deleted client\'s rows went')

      const rotated = await as(app, operator, 'POST', `/api/v1/oauth-clients/${third.id}/secret`)
      t.equal(rotated.statusCode, 200)
      t.same(await artifactIds(app), [...before, 'a-session', 'third-grant'].sort(), 'a rotation revokes nothing')
    })

    t.test('each change is audited with the client and what changed, never the secret; each call evaluated as an admin operation', async (t) => {
      const client = (await create({ ...WEB_APP, name: 'Audited' })).json().data
      await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${client.id}`, { scopes: ['openid'], disabled: true })
      const updatedAt = (await app.repositories.oauthClients.findById(client.id))?.updated_at ?? ''
      await clockPast(Date.parse(updatedAt))
      const unchanged = await as(app, operator, 'PATCH', `/api/v1/oauth-clients/${client.id}`, { scopes: ['openid'], disabled: true })
      t.equal(unchanged.statusCode, 200)
      t.match(unchanged.json().data, { scopes: ['openid'], disabled: true, updated_at: updatedAt })
      t.equal((await app.repositories.oauthClients.findById(client.id))?.updated_at, updatedAt, 'nothing written')
      const secret = (await as(app, operator, 'POST', `/api/v1/oauth-clients/${client.id}/secret`)).json().data.client_secret
      await as(app, operator, 'DELETE', `/api/v1/oauth-clients/${client.id}`)
      await as(app, operator, 'DELETE', `/api/v1/oauth-clients/${client.id}`)
      const entries = await app.database.db.selectFrom('audit_logs').selectAll()
        .where('event', 'like', 'oauth_client.%').where('details', 'like', `%${client.id}%`).orderBy('id').execute()
      t.same(entries.map((entry) => entry.event), ['oauth_client.created', 'oauth_client.updated', 'oauth_client.secret_rotated', 'oauth_client.deleted'],
        'a change that changed nothing, and deleting what is gone, are not audited')
      t.ok(entries.every((entry) => entry.actor_id === operator.id))
      const details = entries.map((entry) => JSON.parse(entry.details))
      const { name: _name, ...registration } = WEB_APP
      t.same(details[0], { client_id: client.id, name: 'Audited', through: 'admin_api', confidential: true, signing_algorithm: 'RS256', ...registration })
      t.same(details[1], { client_id: client.id, name: 'Audited', changed: ['scopes', 'disabled'], scopes: ['openid'], disabled: true, artifacts_removed: 0 })
      t.same(details[2], { client_id: client.id, name: 'Audited' })
      t.same(details[3], { client_id: client.id, name: 'Audited', artifacts_removed: 0 })
      const everything = JSON.stringify(entries)
      t.notOk(everything.includes(secret) || everything.includes(client.client_secret), 'no secret')
      t.notOk(everything.includes(clientSecretHash(secret)), 'no hash')
      t.notOk(everything.includes('[REDACTED]'), 'no detail key is one the redaction hides')
      const evaluated = await app.database.db.selectFrom('audit_logs').select('details')
        .where('event', '=', 'access.evaluated').where('details', 'like', '%/api/v1/oauth-clients%').execute()
      t.ok(evaluated.length >= 5, 'zero trust evaluated them (ZERO_TRUST_MODE=monitor)')
    })
  })
}

t.test('the OpenAPI document lists the six oauthClients.* operations', async (t) => {
  const app = await build(t)
  const document = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  const operations = Object.entries(document.paths as Record<string, Record<string, { operationId: string }>>)
    .filter(([path]) => path.startsWith('/api/v1/oauth-clients'))
    .flatMap(([, methods]) => Object.values(methods).map((operation) => operation.operationId)).sort()
  t.same(operations, [
    'oauthClients.create', 'oauthClients.delete', 'oauthClients.get', 'oauthClients.list', 'oauthClients.rotateSecret', 'oauthClients.update'
  ])
})
