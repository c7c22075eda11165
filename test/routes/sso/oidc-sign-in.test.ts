import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { claimsOf } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail } from '../../helpers/organizations.js'
import { OpenIdTestProvider } from '../../helpers/servers/openid-provider.js'
import { APPLICATION, PUBLIC_URL, SSO_ENV, SsoHarness, uniqueDomain } from '../../helpers/sso.js'

/**
 * Sign-in through an organization's own OpenID provider (docs/api.md, "Enterprise sign-in"):
 * a real one (oidc-provider) on 127.0.0.1 with its client registered as providers register one
 * by default (client_secret_basic); the account made just in time, a member with the role its
 * groups map to; and what the service must refuse (docs/security.md, "Enterprise sign-in").
 * Every server here listens on 127.0.0.1, and the apps resolve loopback names only.
 */

const CALLBACK = `${PUBLIC_URL}/api/v1/sso/oidc/callback`
/** The setting that lets an issuer on this machine be reached, as a development IdP would need. */
const LOOPBACK_ALLOWED = { SSO_METADATA_ALLOWED_NETWORKS: '127.0.0.0/8' }

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url, { env: { ...SSO_ENV, ...LOOPBACK_ALLOWED } })
    const h = new SsoHarness(app, smtp)
    const provider = await new OpenIdTestProvider({
      id: 'users-api-sso', secret: 'sso-client-secret', redirectUri: CALLBACK, tokenEndpointAuthMethod: 'client_secret_basic'
    }).start()
    t.teardown(async () => { await provider.stop() })

    /** A team with a verified domain and an OpenID connection to the provider. */
    const connected = async (fields: Record<string, unknown> = {}) => {
      const team = await h.team('Acme')
      const domain = uniqueDomain()
      await h.verifiedDomain(team.owner, team.organization.id, domain)
      const created = await h.call(team.owner, 'POST', `/organizations/${team.organization.id}/sso-connections`, {
        name: 'Acme OpenID',
        oidc_issuer: provider.issuer,
        oidc_client_id: 'users-api-sso',
        oidc_client_secret: 'sso-client-secret',
        role_mapping: { 'Acme Admins': 'admin' },
        ...fields
      })
      if (created.statusCode !== 201) throw new Error(`connection not created: ${created.body}`)
      return { ...team, domain, connection: created.json().data, created }
    }

    /** The browser application's sign-in: to the provider, signed in there as `login`, back through the callback. */
    const signIn = async (connectionId: string, login: string, tamper: (callback: URL) => void = () => {}) => {
      const started = await h.startAt(`/api/v1/sso/oidc/${connectionId}/sign-in`)
      const callback = await provider.signIn(started.location, login)
      tamper(callback)
      const answer = await app.inject({ method: 'GET', url: `${callback.pathname}${callback.search}` })
      return { started, callback, answer, back: SsoHarness.back(answer) }
    }

    const memberRole = async (organizationId: string, owner: Parameters<SsoHarness['call']>[0], email: string) =>
      (await h.call(owner, 'GET', `/organizations/${organizationId}/members?search=${encodeURIComponent(email)}`)).json().data
        .find((member: { email: string }) => member.email === email)?.role

    const latestRefusal = async () => {
      const row = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed')
        .orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirst()
      return JSON.parse(row?.details ?? '{}')
    }

    t.test('a first sign-in makes the account and its membership with the mapped role; a later one follows the groups', async (t) => {
      const { owner, organization, domain, connection, created } = await connected()
      t.match(connection, {
        kind: 'oidc',
        oidc_issuer: provider.issuer,
        oidc_client_id: 'users-api-sso',
        oidc_token_endpoint_auth_method: 'client_secret_basic',
        oidc_scopes: ['openid', 'email', 'profile'],
        oidc_redirect_uri: CALLBACK,
        sign_in_url: `${PUBLIC_URL}/api/v1/sso/oidc/${connection.id}/sign-in`,
        idp_entity_id: null,
        acs_url: null
      })
      t.notMatch(created.body, 'sso-client-secret', 'the secret is never shown')
      const stored = await app.database.db.selectFrom('sso_connections').select('oidc_client_secret').where('id', '=', connection.id).executeTakeFirst()
      t.match(stored?.oidc_client_secret, /^v1\./, 'kept sealed')
      t.notMatch(stored?.oidc_client_secret, 'sso-client-secret')

      const email = `alice@${domain}`
      provider.accounts.set('alice', { email, email_verified: true, name: 'Alice Example', groups: ['Acme Admins', 'Staff'] })
      const { started, callback, back } = await signIn(connection.id, 'alice')
      const authorize = new URL(started.location)
      t.equal(`${authorize.origin}${authorize.pathname}`, `${provider.issuer}/auth`, 'to the provider\'s authorization endpoint')
      t.match(Object.fromEntries(authorize.searchParams), {
        client_id: 'users-api-sso', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid email profile', code_challenge_method: 'S256'
      })
      t.ok(authorize.searchParams.get('nonce'), 'a nonce')
      t.equal(callback.searchParams.get('iss'), provider.issuer, 'the provider names itself in the response')
      t.equal(`${back.origin}${back.pathname}`, APPLICATION)
      const exchanged = await h.exchange(back.searchParams.get('code') ?? '', started.verifier)
      t.equal(exchanged.statusCode, 200, exchanged.body)
      const token = exchanged.json().data.access_token
      t.same(claimsOf(token).amr, ['fed'])
      const me = (await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })).json().data
      t.match(me, { email, name: 'Alice Example', email_verified: true })
      t.equal(await memberRole(organization.id, owner, email), 'admin', 'joined with the role of the group mapped')

      provider.accounts.set('alice', { email, email_verified: true, name: 'Alice Example', groups: ['Staff'] })
      t.ok((await signIn(connection.id, 'alice')).back.searchParams.get('code'))
      t.equal(await memberRole(organization.id, owner, email), 'member', 'the default role')
      const audited = await app.database.db.selectFrom('audit_logs').select(['event', 'details']).where('target_id', '=', me.id).execute()
      t.ok(audited.some((row) => row.event === 'user.created' && row.details.includes(`sso:${connection.id}`)), 'user.created through the connection')
      t.ok(audited.some((row) => row.event === 'membership.role_changed'), 'membership.role_changed')

      const discovered = await app.inject({ method: 'POST', url: '/api/v1/auth/sso', payload: { email } })
      t.match(discovered.json().data.connections, [{ id: connection.id, kind: 'oidc', sign_in_url: connection.sign_in_url }], 'home-realm discovery routes to it')
      const spMetadata = await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/metadata` })
      t.equal(spMetadata.statusCode, 404, 'no SAML metadata for an OpenID connection')
    })

    t.test('what the service must refuse is refused, audited, and signs nobody in', async (t) => {
      const { domain, connection } = await connected()
      const outside = `mallory@${uniqueDomain('elsewhere')}`
      provider.accounts.set('outsider', { email: outside, email_verified: true })
      provider.accounts.set('unverified', { email: `umberto@${domain}`, email_verified: false })
      provider.accounts.set('nameless', { name: 'No Address' })
      provider.accounts.set('honest', { email: `hannah@${domain}`, email_verified: true })
      const cases: Array<[string, string, RegExp, ((callback: URL) => void)?]> = [
        ['an address outside the verified domains', 'outsider', /outside the organization's verified domains/],
        ['an address the provider says it has not verified', 'unverified', /the provider says the address is not verified/],
        ['no address at all', 'nameless', /names no usable e-mail address/],
        ['a response naming another issuer (a mix-up)', 'honest', /not from the connection's issuer/, (callback) => { callback.searchParams.set('iss', 'https://evil.example') }],
        ['a response without the issuer the provider always sends', 'honest', /not from the connection's issuer/, (callback) => { callback.searchParams.delete('iss') }]
      ]
      for (const [name, login, reason, tamper] of cases) {
        await t.test(name, async (t) => {
          const { back } = await signIn(connection.id, login, tamper)
          t.equal(back.searchParams.get('error'), 'SSO_RESPONSE_REJECTED', back.href)
          t.equal(back.searchParams.get('code'), null, 'no code')
          t.match(await latestRefusal(), { provider: `sso:${connection.id}`, detail: reason }, 'audited with the check that failed')
        })
      }
      const accounts = await app.database.db.selectFrom('users').select('email').where('email', 'like', `%@${domain}`).execute()
      t.same(accounts, [], 'no account made')

      const { callback, back } = await signIn(connection.id, 'honest')
      t.ok(back.searchParams.get('code'), 'the honest sign-in passes')
      const replayed = await app.inject({ method: 'GET', url: `${callback.pathname}${callback.search}` })
      t.equal(replayed.statusCode, 400, 'the callback replayed: its state is spent')
      t.equal(replayed.json().error.code, 'INVALID_OAUTH_STATE')
      const forged = await app.inject({ method: 'GET', url: `/api/v1/sso/oidc/callback?code=x&state=never-issued&iss=${encodeURIComponent(provider.issuer)}` })
      t.equal(forged.json().error.code, 'INVALID_OAUTH_STATE', 'a state the service never issued')
    })

    t.test('an ID token without the address: userinfo, read through the outbound rule, gives it', async (t) => {
      const sparse = await new OpenIdTestProvider({
        id: 'users-api-sparse', secret: 'sparse-secret', redirectUri: CALLBACK, tokenEndpointAuthMethod: 'client_secret_basic', claimsInIdToken: false
      }).start()
      t.teardown(async () => { await sparse.stop() })
      const { domain, connection } = await connected({ oidc_issuer: sparse.issuer, oidc_client_id: 'users-api-sparse', oidc_client_secret: 'sparse-secret' })
      sparse.accounts.set('uma', { email: `uma@${domain}`, email_verified: true, name: 'Uma Userinfo', groups: ['Acme Admins'] })
      const started = await h.startAt(`/api/v1/sso/oidc/${connection.id}/sign-in`)
      const callback = await sparse.signIn(started.location, 'uma')
      const back = SsoHarness.back(await app.inject({ method: 'GET', url: `${callback.pathname}${callback.search}` }))
      t.ok(back.searchParams.get('code'), back.href)
      const exchanged = await h.exchange(back.searchParams.get('code') ?? '', started.verifier)
      const token = exchanged.json().data.access_token
      const me = (await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })).json().data
      t.match(me, { email: `uma@${domain}`, name: 'Uma Userinfo' }, 'the address and name from userinfo')
    })

    t.test('the client authenticates as registered; a wrong secret is the provider\'s refusal, and a rotated one works', async (t) => {
      const { owner, organization, domain, connection } = await connected({ oidc_client_secret: 'not-the-secret' })
      provider.accounts.set('walter', { email: `walter@${domain}`, email_verified: true })
      t.equal((await signIn(connection.id, 'walter')).back.searchParams.get('error'), 'OAUTH_PROVIDER_ERROR', 'the token request is refused')
      t.match(await latestRefusal(), { provider: `sso:${connection.id}`, reason: 'sso_provider_error', detail: /HTTP 401/ }, 'audited for the owners to mend')
      const path = `/organizations/${organization.id}/sso-connections/${connection.id}`
      const rotated = await h.call(owner, 'PATCH', path, { oidc_client_secret: 'sso-client-secret' })
      t.notMatch(rotated.body, 'sso-client-secret', 'the secret is never shown')
      t.ok((await signIn(connection.id, 'walter')).back.searchParams.get('code'), 'the rotated secret, in HTTP Basic')
      // oidc-provider takes either way from a client registered for one of them (what each sends:
      // test/federation/client.test.ts).
      const posted = await h.call(owner, 'PATCH', path, { oidc_token_endpoint_auth_method: 'client_secret_post' })
      t.equal(posted.json().data.oidc_token_endpoint_auth_method, 'client_secret_post')
      t.ok((await signIn(connection.id, 'walter')).back.searchParams.get('code'), 'the secret in the form')
    })

    t.test('a connection is to a SAML IdP or an OpenID provider, named exactly, reached only where the outbound rule allows', async (t) => {
      const { owner, organization, connection } = await connected()
      const base = `/organizations/${organization.id}/sso-connections`
      const create = async (fields: Record<string, unknown>) => await h.call(owner, 'POST', base, { name: 'Another', ...fields })
      const client = { oidc_client_id: 'users-api-sso', oidc_client_secret: 'sso-client-secret' }
      const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
        ['both kinds at once', { oidc_issuer: provider.issuer, ...client, idp_entity_id: 'x' }, '/oidc_issuer', /not both/],
        ['an issuer without its client', { oidc_issuer: provider.issuer }, '/oidc_issuer', /go together/],
        ['scopes without openid', { oidc_issuer: provider.issuer, ...client, oidc_scopes: ['email'] }, '/oidc_scopes', /must include openid/],
        ['an issuer its discovery document does not name', { oidc_issuer: `${provider.issuer}/`, ...client }, '/oidc_issuer', /names another issuer/],
        ['an issuer with a query', { oidc_issuer: `${provider.issuer}?tenant=x`, ...client }, '/oidc_issuer', /must not contain a query/],
        ['an IdP-initiated login URL', { oidc_issuer: provider.issuer, ...client, idp_initiated_login_url: APPLICATION }, '/idp_initiated_login_url', /SAML connections only/],
        ['the tenant of personal Microsoft accounts', { oidc_issuer: 'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0', ...client },
          '/oidc_issuer', /personal Microsoft accounts/],
        ['a discovery document naming an http endpoint off this machine', { oidc_issuer: (await plainHttpIssuer(t)), ...client }, '/oidc_issuer', /lacks an authorization, token or JWKS URL/]
      ]
      for (const [name, fields, path, message] of cases) {
        const answer = await create(fields)
        t.equal(answer.statusCode, 400, name)
        t.match(answer.json().error.details, [{ path, message }], name)
      }
      const path = `${base}/${connection.id}`
      const saml = await h.call(owner, 'PATCH', path, { idp_entity_id: 'https://idp.example' })
      t.match(saml.json().error.details, [{ path: '/idp_metadata_xml', message: /takes the oidc_ fields/ }], 'SAML fields on an OpenID connection')

      // The stored secret never goes to an issuer it was not given for: repointing needs the secret anew.
      const other = await new OpenIdTestProvider({ id: 'users-api-sso', secret: 'other-secret', redirectUri: CALLBACK, tokenEndpointAuthMethod: 'client_secret_basic' }).start()
      t.teardown(async () => { await other.stop() })
      const repointed = await h.call(owner, 'PATCH', path, { oidc_issuer: other.issuer })
      t.equal(repointed.statusCode, 400)
      t.match(repointed.json().error.details, [{ path: '/oidc_client_secret', message: /required with a new oidc_issuer/ }])
      const moved = await h.call(owner, 'PATCH', path, { oidc_issuer: other.issuer, oidc_client_secret: 'other-secret' })
      t.equal(moved.json().data.oidc_issuer, other.issuer)
      const updated = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'sso_connection.updated')
        .orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirstOrThrow()
      t.match(JSON.parse(updated.details), { oidc_issuer: other.issuer, previous_oidc_issuer: provider.issuer }, 'audited with both issuers')

      // Without SSO_METADATA_ALLOWED_NETWORKS, this machine is out of reach: nothing connects to it.
      const { app: strict, smtp: strictSmtp } = await appWithMail(t, backend.url, { env: SSO_ENV })
      const listener = await countingServer(t)
      const sh = new SsoHarness(strict, strictSmtp)
      const team = await sh.team('Strict')
      const refused = await sh.call(team.owner, 'POST', `/organizations/${team.organization.id}/sso-connections`, {
        name: 'Local', oidc_issuer: listener.url, ...client
      })
      t.equal(refused.statusCode, 400)
      t.match(refused.json().error.details, [{ path: '/oidc_issuer', message: /SSO_METADATA_ALLOWED_NETWORKS/ }])
      t.equal(listener.connections(), 0, 'no connection opened')
    })
  })
}

/** An issuer on 127.0.0.1 whose discovery document sends the token request in plain http to a public address. */
async function plainHttpIssuer (t: Test): Promise<string> {
  const server = http.createServer((request, response) => {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: 'http://203.0.113.10/token', jwks_uri: `${issuer}/jwks`
    }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => await new Promise((resolve) => server.close(resolve)))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A server on 127.0.0.1 that counts the connections it is opened. */
async function countingServer (t: Test) {
  let connections = 0
  const server = http.createServer((_request, response) => { response.end('{}') })
  server.on('connection', () => { connections++ })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => await new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, connections: () => connections }
}
