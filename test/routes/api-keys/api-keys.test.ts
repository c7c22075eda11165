import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, TEST_PASSWORD, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl, REDIS_ENV, suiteName } from '../../helpers/database.js'
import { appWithMail, OrganizationHarness, refused } from '../../helpers/organizations.js'
import { StatementLog } from '../../helpers/statements.js'

/** API keys (docs/api.md, "API keys"): a person's and an organization's, and the attacks on them. */

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

async function call (app: FastifyInstance, credential: string, method: Method, url: string, payload?: object) {
  return await app.inject(withToken(credential, { method, url: `/api/v1${url}`, ...(payload !== undefined && { payload }) }))
}

/** A new key of `account` with `scopes`: the key and its id. */
async function personKey (app: FastifyInstance, account: Account, scopes: string[], extra: object = {}) {
  const created = await call(app, account.token, 'POST', '/api-keys', { name: 'CI', scopes, ...extra })
  if (created.statusCode !== 201) throw new Error(`no key: ${created.body}`)
  const { key, id } = created.json().data as { key: string, id: string }
  return { key, id }
}

async function entries (app: FastifyInstance, event: string) {
  await app.auditTrail.flush()
  const rows = await app.database.db.selectFrom('audit_logs').selectAll().where('event', '=', event).orderBy('created_at').execute()
  return rows.map((row) => ({ ...row, details: JSON.parse(row.details) as Record<string, unknown> }))
}

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const statements = new StatementLog()
    const { app, smtp } = await appWithMail(t, backend.url, { onStatement: statements.onStatement })
    const h = new OrganizationHarness(app, smtp)

    t.test('a person\'s key: shown once, recognisable, acts as the person within its scopes, audited with its id', async (t) => {
      const account = await createAccount(app)
      const created = await call(app, account.token, 'POST', '/api-keys', { name: 'CI deploys', scopes: ['read', 'create'] })
      t.equal(created.statusCode, 201)
      const key = created.json().data
      t.match(key, { name: 'CI deploys', scopes: ['read', 'create'], user_id: account.id, organization_id: null, role: null, last_used_at: null, expires_at: null })
      t.match(key.key, /^uak_[0-9a-f]{32}_[0-9A-Za-z]{38}$/, 'prefixed, with its checksum')
      t.equal(created.headers.location, `/api/v1/api-keys/${key.id as string}`)
      t.ok(key.key.startsWith(key.prefix), 'the prefix shown in lists is the key\'s start')

      const notice = await smtp.next((mail) => mail.to.includes(account.email) && mail.subject === 'An API key was made for your account')
      t.match(notice.text, /Its name: CI deploys\./, 'its owner is told, as of every sensitive change')
      const listed = await call(app, account.token, 'GET', '/api-keys')
      t.equal(listed.statusCode, 200)
      t.same(listed.json().data.map((item: { id: string }) => item.id), [key.id])
      t.notOk(JSON.stringify(listed.json()).includes(key.key.slice(-20)), 'the list never holds the key')
      const stored = await app.database.db.selectFrom('api_keys').selectAll().where('id', '=', key.id).executeTakeFirstOrThrow()
      t.notOk(JSON.stringify(stored).includes(key.key.slice(-20)), 'only its hash is stored')

      const me = await call(app, key.key, 'GET', '/auth/me')
      t.equal(me.statusCode, 200, 'the key acts as its person')
      t.equal(me.json().data.id, account.id)
      const post = await call(app, key.key, 'POST', '/posts', { title: 'From CI', body: 'Deployed.' })
      t.equal(post.statusCode, 201, 'create is in its scopes')
      const postId = post.json().data.id as string
      refused(t, await call(app, key.key, 'DELETE', `/posts/${postId}`), 403, 'FORBIDDEN', 'Permission denied. Requires: write')
      refused(t, await call(app, key.key, 'PATCH', `/users/${account.id}`, { name: 'Renamed' }), 403, 'FORBIDDEN')
      t.equal((await call(app, account.token, 'DELETE', `/posts/${postId}`)).statusCode, 204, 'what the person may do, their token still does')

      const [made] = await entries(app, 'api_key.created').then((rows) => rows.filter((row) => row.details.credential_id === key.id))
      t.match(made, { actor_id: account.id, target_id: account.id, details: { credential_id: key.id, scopes: ['read', 'create'] } })
      const organization = await h.organization(account)
      const inviting = await personKey(app, account, ['read', 'members:invite'])
      const invited = await call(app, inviting.key, 'POST', `/organizations/${organization.id}/invitations`, { email: 'new@example.com', role: 'member' })
      t.equal(invited.statusCode, 201, 'a person\'s key uses organization permissions where the person holds them')
      const [invitation] = (await entries(app, 'invitation.created')).filter((row) => row.details.organization_id === organization.id)
      t.match(invitation, { actor_id: account.id, details: { api_credential_id: inviting.id } }, 'the entry names the key')
      refused(t, await call(app, inviting.key, 'PATCH', `/organizations/${organization.id}`, { name: 'Renamed' }), 403, 'FORBIDDEN',
        'Permission denied. Requires: org:update')
      refused(t, await call(app, inviting.key, 'POST', `/organizations/${organization.id}/invitations`, { email: 'second@example.com', role: 'owner' }), 403,
        'API_KEY_RESTRICTED', 'Not allowed with an API key: granting the owner role')
      const reading = await personKey(app, account, ['org:read'])
      refused(t, await call(app, reading.key, 'DELETE', `/organizations/${organization.id}/members/${account.id}`), 403, 'FORBIDDEN',
        'Permission denied. Requires: write')
    })

    t.test('a key holds no permission its person lacks: asking for one is refused, and a role taken away goes with it', async (t) => {
      const account = await createAccount(app)
      refused(t, await call(app, account.token, 'POST', '/api-keys', { name: 'Escalate', scopes: ['read', 'manage_users'] }), 403, 'FORBIDDEN',
        'Permission denied. Requires: manage_users')
      const admin = await createAccount(app, { roles: ['admin'] })
      const { key } = await personKey(app, admin, ['read', 'manage_roles'])
      t.equal((await call(app, key, 'GET', `/users/${account.id}/roles`)).statusCode, 200)
      await app.repositories.users.removeRole(admin.id, 'admin')
      app.repositories.users.invalidate(admin.id)
      refused(t, await call(app, key, 'GET', `/users/${account.id}/roles`), 403, 'FORBIDDEN', 'Permission denied. Requires: manage_roles')
      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const all = await personKey(app, superAdmin, ['admin'])
      t.equal((await call(app, all.key, 'GET', '/audit-logs')).statusCode, 200, 'the admin scope covers every permission')
      refused(t, await call(app, all.key, 'PUT', `/users/${account.id}/roles/super_admin`), 403, 'API_KEY_RESTRICTED',
        'Not allowed with an API key: granting a role')
      refused(t, await call(app, all.key, 'POST', `/users/${superAdmin.id}/devices`, { device_id: 'attacker-laptop', name: 'Laptop' }), 403,
        'API_KEY_RESTRICTED', 'Not allowed with an API key: trusting a device')
    })

    t.test('a mistyped or made-up key is refused without reading the database; an unknown one with a good checksum after one read', async (t) => {
      const account = await createAccount(app)
      const { key } = await personKey(app, account, ['read'])
      const last = key.at(-1) === 'a' ? 'b' : 'a'
      for (const bad of [key.slice(0, -1) + last, `${key.slice(0, 10)}${key.slice(11)}`, 'uak_', `uak_${'0'.repeat(32)}_${'A'.repeat(38)}`]) {
        const ran = await statements.during(async () => {
          refused(t, await call(app, bad, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
        })
        // The background jobs run beside the request (the revocation list's poll twice a second, the
        // outbox's every 2 s): what the request could have read is a key, its person or a session.
        t.same(ran.filter((sql) => /"(api_keys|users|sessions)"/.test(sql)), [], `no statement for ${bad.slice(0, 16)}…`)
      }
      const forged = key.replace(/_[0-9a-f]{32}_/, `_${'f'.repeat(32)}_`)
      refused(t, await call(app, forged, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
    })

    t.test('a key makes no sensitive change, no step-up, no credential that outlives it, no impersonation, and does not sign out', async (t) => {
      const admin = await createAccount(app, { roles: ['super_admin'] })
      const { key } = await personKey(app, admin, ['admin'])
      const victim = await createAccount(app)
      const restricted = (what: string) => ({ error: { code: 'API_KEY_RESTRICTED', message: `Not allowed with an API key: ${what}` } })
      const attempts: Array<[Method, string, object | undefined, string]> = [
        ['PATCH', `/users/${admin.id}`, { password: 'a-new-password-123', current_password: TEST_PASSWORD }, 'a sensitive change'],
        ['PATCH', `/users/${admin.id}`, { email: 'taken-over@example.com', current_password: TEST_PASSWORD }, 'a sensitive change'],
        ['POST', '/auth/reauthenticate', { password: TEST_PASSWORD }, 'a step-up'],
        ['POST', '/api-keys', { name: 'Another', scopes: ['read'], current_password: TEST_PASSWORD }, 'making an API key'],
        ['POST', `/users/${victim.id}/impersonation`, { reason: 'Support ticket 1' }, 'impersonating another account'],
        ['POST', '/auth/logout', {}, 'signing out (delete the key instead)'],
        ['POST', '/auth/mfa/totp/setup', undefined, 'a sensitive change'],
        ['POST', '/oauth-clients', { name: 'Backdoor', redirect_uris: [], grant_types: ['client_credentials'], scopes: ['reports.read'] }, 'registering an application'],
        ['POST', '/webhooks', { url: 'https://receiver.example.com/hook', events: ['user.created'] }, 'making a webhook endpoint']
      ]
      for (const [method, url, payload, what] of attempts) {
        const answer = await call(app, key, method, url, payload)
        t.equal(answer.statusCode, 403, `${method} ${url}`)
        t.same(answer.json(), restricted(what))
      }
      t.equal((await call(app, key, 'GET', '/auth/me')).statusCode, 200, 'the key still works: signing out did not stop it')
      const stored = await app.database.db.selectFrom('users').select(['email']).where('id', '=', admin.id).executeTakeFirstOrThrow()
      t.equal(stored.email, admin.email, 'the address is unchanged')
      t.equal((await call(app, key, 'GET', '/api-keys')).json().data.length, 1, 'no second key')
      const made = await app.database.db.selectFrom('oauth_clients').select('id').where('name', '=', 'Backdoor').execute()
      t.same(made, [], 'no application registered')
    })

    t.test('on routes that name no permission a key needs read to read and write to change', async (t) => {
      const account = await createAccount(app)
      const { key } = await personKey(app, account, ['read'])
      t.equal((await call(app, key, 'GET', '/auth/sessions')).statusCode, 200)
      refused(t, await call(app, key, 'POST', '/organizations', { name: 'Read only', slug: `read-only-${Date.now()}` }), 403, 'FORBIDDEN',
        'Permission denied. Requires: write')
      refused(t, await call(app, key, 'POST', `/users/${account.id}/devices`, { device_id: 'attacker-laptop', name: 'Laptop' }), 403, 'FORBIDDEN')
      const writer = await personKey(app, account, ['create'])
      refused(t, await call(app, writer.key, 'GET', '/auth/me'), 403, 'FORBIDDEN', 'Permission denied. Requires: read')
    })

    t.test('a new password deletes the person\'s keys with their sessions', async (t) => {
      const account = await createAccount(app)
      const { key } = await personKey(app, account, ['read'])
      const changed = await call(app, account.token, 'PATCH', `/users/${account.id}`, { password: 'another-password-123', current_password: TEST_PASSWORD })
      t.equal(changed.statusCode, 200)
      refused(t, await call(app, key, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
      t.same(await app.database.db.selectFrom('api_keys').select('id').where('user_id', '=', account.id).execute(), [])
    })

    t.test('making a key is a sensitive change: an access token alone is refused, the password beside it is taken', async (t) => {
      const account = await createAccount(app, { reauthenticated: false })
      const bare = await call(app, account.token, 'POST', '/api-keys', { name: 'CI', scopes: ['read'] })
      refused(t, bare, 403, 'REAUTHENTICATION_REQUIRED')
      const proved = await call(app, account.token, 'POST', '/api-keys', { name: 'CI', scopes: ['read'], current_password: TEST_PASSWORD })
      t.equal(proved.statusCode, 201)
      const unverified = await createAccount(app, { verified: false })
      refused(t, await call(app, unverified.token, 'POST', '/api-keys', { name: 'CI', scopes: ['read'] }), 403, 'EMAIL_NOT_VERIFIED')
    })

    t.test('expired, deleted, of a suspended or deleted person: refused', async (t) => {
      const account = await createAccount(app)
      refused(t, await call(app, account.token, 'POST', '/api-keys', { name: 'Past', scopes: ['read'], expires_at: '2020-01-01T00:00:00Z' }), 400, 'VALIDATION_FAILED')
      const soon = await personKey(app, account, ['read'], { expires_at: new Date(Date.now() + 1500).toISOString() })
      t.equal((await call(app, soon.key, 'GET', '/auth/me')).statusCode, 200)
      const elapsed = await msUntil(async () => (await call(app, soon.key, 'GET', '/auth/me')).statusCode === 401, 5000)
      t.ok(elapsed < 5000, 'refused once expired')

      const { key, id } = await personKey(app, account, ['read'])
      t.equal((await call(app, account.token, 'DELETE', `/api-keys/${id}`)).statusCode, 204)
      refused(t, await call(app, key, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
      t.same((await entries(app, 'api_key.deleted')).filter((row) => row.details.credential_id === id).length, 1)

      const admin = await createAccount(app, { roles: ['admin'] })
      const suspendedOwn = await personKey(app, account, ['read'])
      t.equal((await call(app, admin.token, 'POST', `/users/${account.id}/suspension`, { reason: 'Spam' })).statusCode, 200)
      refused(t, await call(app, suspendedOwn.key, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
      t.equal((await call(app, admin.token, 'DELETE', `/users/${account.id}/suspension`)).statusCode, 204)
      t.equal((await call(app, suspendedOwn.key, 'GET', '/auth/me')).statusCode, 200, 'working again once lifted')

      const other = await createAccount(app)
      const others = await personKey(app, other, ['read'])
      t.equal((await call(app, admin.token, 'DELETE', `/api-keys/${others.id}`)).statusCode, 204, 'another\'s key: nothing to delete')
      t.equal((await call(app, others.key, 'GET', '/auth/me')).statusCode, 200, 'and it still works')
    })

    t.test('an organization\'s key: its role and scopes, its organization only, no person behind it', async (t) => {
      const { owner, organization, admin } = await h.team('Keyed')
      const elsewhere = await h.organization(owner, 'Elsewhere')
      refused(t, await call(app, admin.token, 'POST', `/organizations/${organization.id}/api-keys`, { name: 'Too high', role: 'owner' }), 403, 'FORBIDDEN',
        'Permission denied. Requires: the owner role')
      refused(t, await call(app, owner.token, 'POST', `/organizations/${organization.id}/api-keys`, { name: 'Odd', role: 'member', scopes: ['org:update'] }),
        400, 'VALIDATION_FAILED')
      const created = await call(app, admin.token, 'POST', `/organizations/${organization.id}/api-keys`, { name: 'Sync', role: 'admin', scopes: ['org:read', 'members:read', 'org:update', 'members:invite'] })
      t.equal(created.statusCode, 201)
      const { key, id } = created.json().data as { key: string, id: string }
      t.match(created.json().data, { organization_id: organization.id, role: 'admin', user_id: null })

      t.equal((await call(app, key, 'GET', `/organizations/${organization.id}`)).statusCode, 200)
      t.equal((await call(app, key, 'GET', `/organizations/${organization.id}/members`)).statusCode, 200)
      const renamed = await call(app, key, 'PATCH', `/organizations/${organization.id}`, { name: 'Keyed Renamed' })
      t.equal(renamed.statusCode, 200)
      const [update] = (await entries(app, 'organization.updated')).filter((row) => row.details.organization_id === organization.id)
      t.match(update, { actor_id: null, details: { api_credential_id: id } }, 'audited with the key, no person as actor')
      refused(t, await call(app, key, 'DELETE', `/organizations/${organization.id}/members/${admin.id}`), 403, 'FORBIDDEN')
      refused(t, await call(app, key, 'POST', `/organizations/${organization.id}/invitations`, { email: 'x@example.com', role: 'member' }), 403,
        'API_KEY_RESTRICTED')
      for (const url of [`/organizations/${elsewhere.id}`, `/organizations/${elsewhere.id}/members`]) {
        refused(t, await call(app, key, 'GET', url), 404, 'NOT_FOUND', 'Organization not found')
      }
      for (const [method, url] of [['GET', '/auth/me'], ['GET', '/users'], ['GET', '/organizations'], ['GET', '/api-keys']] as Array<[Method, string]>) {
        refused(t, await call(app, key, method, url), 403, 'API_KEY_RESTRICTED')
      }
      refused(t, await call(app, key, 'POST', `/organizations/${organization.id}/api-keys`, { name: 'Spawn', role: 'member' }), 403, 'API_KEY_RESTRICTED')
      const owners = await call(app, owner.token, 'POST', `/organizations/${organization.id}/api-keys`, { name: 'Everything', role: 'owner' })
      const ownerKey = owners.json().data.key as string
      refused(t, await call(app, ownerKey, 'POST', `/organizations/${organization.id}/scim-directories`, { name: 'Shadow directory' }), 403, 'API_KEY_RESTRICTED',
        'Not allowed with an API key: making a SCIM directory\'s token')
      const signIn = 'changing how the organization signs in'
      const path = `/organizations/${organization.id}`
      for (const [method, url, payload, what] of [
        ['PATCH', `${path}/sso-connections/${organization.id}`, { name: 'Repointed' }, signIn],
        ['DELETE', `${path}/sso-connections/${organization.id}`, undefined, signIn],
        ['PATCH', `${path}/domains/${organization.id}`, { sso_required: true }, signIn],
        ['POST', `${path}/domains/${organization.id}/verify`, {}, signIn],
        ['DELETE', `${path}/domains/${organization.id}`, undefined, signIn],
        ['PATCH', `${path}/scim-directories/${organization.id}`, { default_role: 'owner' }, 'changing a SCIM directory'],
        ['DELETE', `${path}/scim-directories/${organization.id}`, undefined, 'changing a SCIM directory'],
        ['PATCH', `${path}/members/${admin.id}`, { role: 'owner' }, 'granting the owner role'],
        ['DELETE', path, undefined, 'deleting the organization']
      ] as Array<[Method, string, object | undefined, string]>) {
        refused(t, await call(app, ownerKey, method, url, payload), 403, 'API_KEY_RESTRICTED', `Not allowed with an API key: ${what}`)
      }
      t.equal((await h.audited('membership.role_changed', organization.id)).length, 0, 'no role changed')

      const listed = await call(app, owner.token, 'GET', `/organizations/${organization.id}/api-keys`)
      t.same(listed.json().data.map((item: { name: string }) => item.name), ['Sync', 'Everything'], 'both keys, oldest first')
      const stranger = await createAccount(app)
      refused(t, await call(app, stranger.token, 'GET', `/organizations/${organization.id}/api-keys`), 404, 'NOT_FOUND')
      t.equal((await call(app, owner.token, 'DELETE', `/organizations/${elsewhere.id}/api-keys/${id}`)).statusCode, 204, 'under another organization: nothing')
      t.equal((await call(app, key, 'GET', `/organizations/${organization.id}`)).statusCode, 200, 'so it still works')
      t.equal((await call(app, owner.token, 'DELETE', `/organizations/${organization.id}/api-keys/${id}`)).statusCode, 204)
      refused(t, await call(app, key, 'GET', `/organizations/${organization.id}`), 401, 'INVALID_TOKEN')
      t.equal((await call(app, ownerKey, 'GET', `/organizations/${organization.id}/members`)).statusCode, 200)
      t.equal((await call(app, owner.token, 'DELETE', `/organizations/${organization.id}`)).statusCode, 204)
      refused(t, await call(app, ownerKey, 'GET', `/organizations/${organization.id}/members`), 401, 'INVALID_TOKEN', undefined)
    })

    t.test('its use is recorded at most once a minute, however many requests at once and on however many instances', async (t) => {
      const account = await createAccount(app)
      const { key, id } = await personKey(app, account, ['read'])
      const ran = await statements.during(async () => {
        const answers = await Promise.all(Array.from({ length: 50 }, async () => await call(app, key, 'GET', '/auth/me')))
        t.ok(answers.every((answer) => answer.statusCode === 200))
      })
      t.equal(ran.filter((sql) => /^update "api_keys"/i.test(sql)).length, 1, 'one write for 50 requests')
      t.equal(ran.filter((sql) => /from "api_keys"/i.test(sql)).length, 1, 'one read: the requests that came meanwhile waited for it')
      await msUntil(async () => (await app.database.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow()).last_used_at !== null, 2000)
      const first = await app.database.db.selectFrom('api_keys').select('last_used_at').where('id', '=', id).executeTakeFirstOrThrow()
      t.ok(first.last_used_at !== null)
      t.equal((await call(app, account.token, 'GET', '/api-keys')).json().data[0].last_used_at, first.last_used_at, 'shown in the list')
    })
  })

  t.test(`a deleted key is refused within a second by another instance (${backend.name})`, async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const first = await build(t, { databaseUrl, env: REDIS_ENV })
    const second = await build(t, { databaseUrl, env: REDIS_ENV })
    const account = await createAccount(first)
    const { key, id } = await personKey(first, account, ['read'])
    t.equal((await call(second, key, 'GET', '/auth/me')).statusCode, 200, 'the other instance has read and cached it')
    t.equal((await call(first, account.token, 'DELETE', `/api-keys/${id}`)).statusCode, 204)
    const elapsed = await msUntil(async () => (await call(second, key, 'GET', '/auth/me')).statusCode === 401, 3000)
    t.ok(elapsed <= 1000, `refused by the other instance after ${elapsed} ms`)
    const later = await call(first, account.token, 'GET', '/api-keys')
    t.same(later.json().data, [])
    const touched = await second.database.db.selectFrom('api_keys').select('id').where('id', '=', id).execute()
    t.same(touched, [], 'and it is gone from the database')
  })
}
