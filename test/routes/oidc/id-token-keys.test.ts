import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as client from 'openid-client'
import t from 'tap'
import { generateKeyPair, JWT_ALGORITHMS } from '../../../src/security/signing-keys.js'
import { createAccount } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import {
  authorizeWithPassword, CookieBrowser, exchange, insecure, pkceAuthorization, relyingParty, startAuthorizationServer,
  type RunningAuthorizationServer
} from '../../helpers/authorization-server.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { buildLogged } from '../../helpers/log-capture.js'

const PEOPLE = { grant_types: ['authorization_code'], scopes: ['openid', 'email'] }

/** The ID token a relying party with client metadata `metadata` gets for a person signed in through the pages. */
async function idTokenFor (server: RunningAuthorizationServer, config: client.Configuration, redirectUri: string) {
  const person = await createAccount(server.app)
  const request = await pkceAuthorization(config, redirectUri, 'openid email')
  const back = await authorizeWithPassword(new CookieBrowser(server.issuer), request.url.href, person)
  const tokens = await exchange(config, new URL(back), request)
  return { person, idToken: tokens.id_token ?? '', claims: tokens.claims() }
}

/** The kids the authorization server publishes (under HS256: its ID-token keys alone). */
async function publishedKids (issuer: string): Promise<string[]> {
  const jwks = await (await fetch(`${issuer}/oidc/jwks`)).json() as { keys: Array<{ kid: string }> }
  return jwks.keys.map((key) => key.kid)
}

for (const backend of backends()) {
  t.test(`ID tokens (${backend.name})`, async (t) => {
    t.test('a relying party that verifies RS256 only, with its defaults, signs people in whatever JWT_ALGORITHM is', async (t) => {
      for (const algorithm of JWT_ALGORITHMS) {
        const key: Record<string, string> = algorithm === 'HS256'
          ? {}
          : { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: generateKeyPair(algorithm).privateKey }
        const server = await startAuthorizationServer(t, backend.url, key)
        // openid-client expects RS256 ID tokens unless its client metadata says otherwise.
        const { config, redirectUri } = await relyingParty(t, server, { name: 'RS256 only', ...PEOPLE })
        const { person, idToken, claims } = await idTokenFor(server, config, redirectUri)
        t.equal(claims?.sub, person.id, `${algorithm}: signed in`)
        t.equal(decodeProtectedHeader(idToken).alg, 'RS256', `${algorithm}: the ID token is RS256`)
        // As a relying party holding RS256 alone (cjose, mod_auth_openidc's library) checks it.
        const jwks = createRemoteJWKSet(new URL(`${server.issuer}/oidc/jwks`))
        const { payload } = await jwtVerify(idToken, jwks, { algorithms: ['RS256'], issuer: server.issuer, audience: config.clientMetadata().client_id })
        t.equal(payload.sub, person.id, `${algorithm}: verified from the JWKS with RS256 alone`)
      }
    })

    t.test('a client chooses ES256 or EdDSA through the admin API or dynamic registration; nothing else is accepted', async (t) => {
      const registrationToken = 'initial-access-token-of-at-least-32-chars'
      const server = await startAuthorizationServer(t, backend.url, {
        AUTHORIZATION_SERVER_REGISTRATION_TOKEN: registrationToken
      })
      const { rp, redirectUri, registered } = await relyingParty(t, server, { name: 'RS256 by default', ...PEOPLE })
      const chosen = await server.register({ name: 'ES256 chosen', redirect_uris: [redirectUri], ...PEOPLE, id_token_signed_response_alg: 'ES256' })
      const config = await client.discovery(new URL(server.issuer), chosen.id, { client_secret: chosen.secret, id_token_signed_response_alg: 'ES256' }, undefined, insecure)
      const { idToken } = await idTokenFor(server, config, redirectUri)
      t.equal(decodeProtectedHeader(idToken).alg, 'ES256', 'the ID token in the client\'s algorithm')

      const answer = await fetch(`${server.issuer}/oidc/reg`, {
        method: 'POST',
        headers: { authorization: `Bearer ${registrationToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Dynamic', redirect_uris: [`${rp}/dynamic`], scope: 'openid email', id_token_signed_response_alg: 'EdDSA' })
      })
      t.equal(answer.status, 201)
      const dynamic = await answer.json() as Record<'client_id' | 'client_secret' | 'id_token_signed_response_alg', string>
      t.equal(dynamic.id_token_signed_response_alg, 'EdDSA', 'registered as asked, and said so')
      const dynamicConfig = await client.discovery(new URL(server.issuer), dynamic.client_id, { client_secret: dynamic.client_secret, id_token_signed_response_alg: 'EdDSA' }, undefined, insecure)
      const signedIn = await idTokenFor(server, dynamicConfig, `${rp}/dynamic`)
      t.equal(decodeProtectedHeader(signedIn.idToken).alg, 'EdDSA')

      for (const refused of ['HS256', 'none', 'PS256']) {
        const registration = await fetch(`${server.issuer}/oidc/reg`, {
          method: 'POST',
          headers: { authorization: `Bearer ${registrationToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: [`${rp}/dynamic`], id_token_signed_response_alg: refused })
        })
        t.equal(registration.status, 400, `${refused}: refused at registration`)
        t.equal((await registration.json()).error, 'invalid_client_metadata')
        await t.rejects(server.register({ name: 'Refused', redirect_uris: [redirectUri], ...PEOPLE, id_token_signed_response_alg: refused }), `${refused}: refused by the admin API`)
      }
      const read = await server.app.inject({ method: 'GET', url: `/api/v1/oauth-clients/${registered.id}`, headers: { authorization: `Bearer ${server.admin.token}` } })
      t.equal(read.json().data.id_token_signed_response_alg, 'RS256', 'the default, shown')
      const changed = await server.app.inject({
        method: 'PATCH', url: `/api/v1/oauth-clients/${registered.id}`, headers: { authorization: `Bearer ${server.admin.token}` }, payload: { id_token_signed_response_alg: 'EdDSA' }
      })
      t.equal(changed.json().data.id_token_signed_response_alg, 'EdDSA', 'changed by an administrator')
    })

    t.test('instances on one database sign with the same keys; a rotation is staged, activated and retired', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const first = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
      const second = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
      const generation1 = await publishedKids(first.issuer)
      t.equal(generation1.length, 3, 'one key per algorithm')
      t.same(await publishedKids(second.issuer), generation1, 'the second instance publishes the first\'s keys')
      const stored = await first.app.database.db.selectFrom('authorization_server_keys').select(['private_key']).execute()
      t.ok(stored.every((row) => row.private_key.startsWith('v1.') && !row.private_key.includes('PRIVATE KEY')), 'the private keys are stored sealed')

      const keys = first.app.services.idTokenKeys
      t.equal(await keys.stage(), 2)
      t.equal(await keys.stage(), 2, 'staging again keeps the staged generation')
      const staged = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
      const published = await publishedKids(staged.issuer)
      t.equal(published.length, 6, 'staged keys are published beside the signing ones')
      t.same(published.slice(0, 3), generation1, 'the signing generation first')
      const before = await relyingParty(t, staged, { name: 'Before', ...PEOPLE })
      const signedBefore = await idTokenFor(staged, before.config, before.redirectUri)
      t.ok(generation1.includes(String(decodeProtectedHeader(signedBefore.idToken).kid)), 'the staged generation does not sign yet')

      t.equal(await keys.activate(), 2)
      t.equal(await keys.activate(), null, 'nothing left to activate')
      const active = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
      const generation2 = published.slice(3)
      const after = await relyingParty(t, active, { name: 'After', ...PEOPLE })
      const signedAfter = await idTokenFor(active, after.config, after.redirectUri)
      t.ok(generation2.includes(String(decodeProtectedHeader(signedAfter.idToken).kid)), 'the activated generation signs')
      const jwks = createRemoteJWKSet(new URL(`${active.issuer}/oidc/jwks`))
      await jwtVerify(signedBefore.idToken, jwks, { algorithms: ['RS256'] })
      t.pass('an ID token of the retiring generation still verifies')

      t.equal(await keys.retire(), 3)
      const retired = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
      t.same(await publishedKids(retired.issuer), generation2, 'the retired generation is no longer published')
    })
  })
}

t.test('keys sealed under a key the ring no longer holds are replaced, with a warning; a former key in SEALING_PREVIOUS_KEYS keeps them', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t, null, { shared: true })
  const issuer = 'https://id.example.com'
  const first = await build(t, { databaseUrl, env: { JWT_ISSUER: issuer, SEALING_KEY: 'a'.repeat(40) } })
  const kids = (await first.inject({ method: 'GET', url: '/oidc/jwks' })).json().keys.map((key: { kid: string }) => key.kid)
  await first.close()

  const rotated = await build(t, { databaseUrl, env: { JWT_ISSUER: issuer, SEALING_KEY: 'b'.repeat(40), SEALING_PREVIOUS_KEYS: 'a'.repeat(40) } })
  t.same((await rotated.inject({ method: 'GET', url: '/oidc/jwks' })).json().keys.map((key: { kid: string }) => key.kid), kids, 'opened with the former key')
  await rotated.close()

  const { app, entries } = await buildLogged(t, { postgresUrl: null, env: { DATABASE_URL: databaseUrl, JWT_ISSUER: issuer, SEALING_KEY: 'c'.repeat(40) } })
  const replaced = (await app.inject({ method: 'GET', url: '/oidc/jwks' })).json().keys.map((key: { kid: string }) => key.kid)
  t.equal(replaced.filter((kid: string) => kids.includes(kid)).length, 0, 'new keys')
  const warning = (await entries()).find((entry) => String(entry.msg).includes('ID-token keys were sealed under a key'))
  t.equal(warning?.level, 40)
  t.same([...(warning?.kids as string[])].sort(), [...kids].sort(), 'a warning names the keys replaced')
})
