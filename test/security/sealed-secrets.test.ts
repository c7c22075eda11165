import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import { Webhook } from 'standardwebhooks'
import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import { SEALED_PURPOSES, SecretBox } from '../../src/security/secret-box.js'
import { generateKeyPair } from '../../src/security/signing-keys.js'
import { createAccount, TEST_PASSWORD, withToken } from '../helpers/accounts.js'
import { build, TEST_SECRET } from '../helpers/app.js'
import { CookieBrowser, authorizeWithPassword, exchange, pkceAuthorization, relyingParty, type RunningAuthorizationServer } from '../helpers/authorization-server.js'
import { backends, freshDatabaseUrl, sqliteFile } from '../helpers/database.js'
import { type CommandRun, runCli } from '../helpers/process.js'
import { webhookReceiver, type WebhookReceiver } from '../helpers/servers/webhook-receiver.js'

/** A webhook endpoint at `receiver`, made by a new super_admin: its id, secret, and a way to send it a test event. */
async function endpoint (app: FastifyInstance, receiver: WebhookReceiver) {
  const operator = await createAccount(app, { roles: ['super_admin'] })
  const created = await app.inject(withToken(operator.token, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, events: ['user.created'] } }))
  const { id, secret } = created.json().data as { id: string, secret: string }
  return { id, secret, operator }
}

/** Sends `hook` a test event from `app`; answers the delivery the receiver got, verified with the hook's secret. */
async function testEventVerified (
  app: FastifyInstance, receiver: WebhookReceiver, hook: { id: string, secret: string, operator: { token: string } }
) {
  const count = receiver.received.length
  const sent = await app.inject(withToken(hook.operator.token, { method: 'POST', url: `/api/v1/webhooks/${hook.id}/test` }))
  if (sent.statusCode !== 202 && sent.statusCode !== 200) throw new Error(`test event refused: ${sent.body}`)
  await receiver.receivedCount(count + 1)
  const delivery = receiver.received[count]
  if (delivery === undefined) throw new Error('no delivery')
  return new Webhook(hook.secret).verify(delivery.body, delivery.headers as Record<string, string>) as { type: string }
}

for (const backend of backends()) {
  t.test(`changing JWT_ALGORITHM keeps sessions, webhook secrets and the sign-in at the authorization server (${backend.name})`, async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const port = await freePort()
    const issuer = `http://127.0.0.1:${port}`
    const receiver = await webhookReceiver(t)
    const common = { JWT_ISSUER: issuer, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', AUTHORIZATION_SERVER_SCOPES: 'api:read' }
    const start = async (env: Record<string, string>) => {
      const app = await build(t, { databaseUrl, env: { ...common, ...env } })
      await app.listen({ port, host: '127.0.0.1' })
      return app
    }

    const before = await start({})
    const person = await createAccount(before)
    const login = await before.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: TEST_PASSWORD } })
    const { refresh_token: refreshToken } = login.json().data
    const hook = await endpoint(before, receiver)
    t.equal((await testEventVerified(before, receiver, hook)).type, 'webhook.test', 'signed with the endpoint\'s secret before')
    const server: RunningAuthorizationServer = {
      app: before,
      issuer,
      admin: hook.operator as RunningAuthorizationServer['admin'],
      register: async (registration) => {
        const answer = await before.inject(withToken(hook.operator.token, { method: 'POST', url: '/api/v1/oauth-clients', payload: registration }))
        const { id, client_secret: secret } = answer.json().data
        return { id, secret }
      }
    }
    const { config, redirectUri } = await relyingParty(t, server, { name: 'Application', grant_types: ['authorization_code'], scopes: ['openid'] })
    const browser = new CookieBrowser(issuer)
    const first = await pkceAuthorization(config, redirectUri, 'openid')
    await exchange(config, new URL(await authorizeWithPassword(browser, first.url.href, person)), first)
    await before.close()

    // JWT_SECRET unchanged, the former signing secret accepted meanwhile: the documented move.
    const after = await start({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: generateKeyPair('EdDSA').privateKey, JWT_PREVIOUS_KEYS: TEST_SECRET })
    const refreshed = await after.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } })
    t.equal(refreshed.statusCode, 200, 'the session goes on: its refresh token still works')
    t.equal((await testEventVerified(after, receiver, hook)).type, 'webhook.test', 'the webhook secret still opens: deliveries verify with it')
    const again = await pkceAuthorization(config, redirectUri, 'openid', { prompt: 'none' })
    const { url } = await browser.follow(again.url.href)
    t.match(url, new RegExp(`^${redirectUri}\\?code=`), 'the browser is still signed in at the authorization server (prompt=none answers a code)')
    await after.close()
  })
}

/** `npm run secrets:reseal` against `env`'s database, as an operator runs it. */
async function reseal (env: Record<string, string>): Promise<CommandRun> {
  return await runCli('secrets-reseal', [], { ...process.env, LOG_LEVEL: 'silent', ...env })
}

t.test('a new SEALING_KEY: the former one in SEALING_PREVIOUS_KEYS opens what it sealed; secrets:reseal moves it all under the new one', async (t) => {
  const { url } = sqliteFile(t)
  const receiver = await webhookReceiver(t)
  const common = { DATABASE_URL: url, JWT_SECRET: TEST_SECRET, JWT_ISSUER: 'https://id.example.com', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }
  const [former, next] = ['a'.repeat(40), 'b'.repeat(40)]

  const first = await build(t, { databaseUrl: url, env: { ...common, SEALING_KEY: former } })
  const person = await createAccount(first)
  const setup = await first.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
  const { secret: totpSecret } = setup.json().data as { secret: string }
  const enabled = await first.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret: totpSecret }) } }))
  t.equal(enabled.statusCode, 200, 'TOTP enrolled under the former key')
  const hook = await endpoint(first, receiver)
  // An OpenID SSO connection's client secret (its sign-in is tested in test/routes/sso/oidc-sign-in.test.ts).
  const organization = await first.inject(withToken(person.token, { method: 'POST', url: '/api/v1/organizations', payload: { name: 'Sealed', slug: 'sealed' } }))
  const connectionId = '01900000-0000-7000-8000-00000000c0de'
  await first.database.db.insertInto('sso_connections').values({
    id: connectionId,
    organization_id: organization.json().data.id,
    name: 'OpenID',
    enabled: 1,
    kind: 'oidc',
    idp_entity_id: '',
    idp_sso_url: '',
    idp_certificates: '[]',
    oidc_issuer: 'https://idp.example',
    oidc_client_id: 'client',
    oidc_client_secret: new SecretBox(former, SEALED_PURPOSES.ssoClientSecret).seal('client-secret'),
    oidc_token_endpoint_auth_method: 'client_secret_basic',
    oidc_scopes: '["openid"]',
    attribute_mapping: '{}',
    role_mapping: '{}',
    default_role: 'member',
    idp_initiated_login_url: null,
    idp_metadata_failures: 0,
    created_at: new Date().toISOString(),
    updated_at: new Date().toISOString()
  }).execute()
  await first.close()

  const rotated = { ...common, SEALING_KEY: next, SEALING_PREVIOUS_KEYS: former }
  const second = await build(t, { databaseUrl: url, env: rotated })
  const login = await second.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: TEST_PASSWORD } })
  const verified = await second.inject({
    method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: login.json().data.mfa_token, code: generateSync({ secret: totpSecret, epoch: Math.floor(Date.now() / 1000) + 30 }) }
  })
  t.equal(verified.statusCode, 200, 'the TOTP secret sealed under the former key still opens')
  t.equal((await testEventVerified(second, receiver, hook)).type, 'webhook.test', 'and the webhook secret')
  await second.close()

  const run = await reseal(rotated)
  t.equal(run.code, 0, 'the reseal succeeds')
  t.equal(run.stdout, 'users: 1 resealed\nwebhook_endpoints: 1 resealed\nauthorization_server_keys: 3 resealed\nsso_connections: 1 resealed\n')
  t.equal((await reseal(rotated)).stdout,
    'users: 0 resealed\nwebhook_endpoints: 0 resealed\nauthorization_server_keys: 0 resealed\nsso_connections: 0 resealed\n', 'nothing left the second time')

  const without = await build(t, { databaseUrl: url, env: { ...common, SEALING_KEY: next } })
  const stored = await without.database.db.selectFrom('users').select('totp_secret').where('id', '=', person.id).executeTakeFirstOrThrow()
  t.equal(new SecretBox(next, SEALED_PURPOSES.totpSecret).open(stored.totp_secret ?? ''), totpSecret, 'sealed under the new key alone')
  t.equal(new SecretBox(former, SEALED_PURPOSES.totpSecret).open(stored.totp_secret ?? ''), null, 'the former key opens it no more')
  const connection = await without.database.db.selectFrom('sso_connections').select('oidc_client_secret').where('id', '=', connectionId).executeTakeFirstOrThrow()
  t.equal(new SecretBox(next, SEALED_PURPOSES.ssoClientSecret).open(connection.oidc_client_secret ?? ''), 'client-secret', 'the client secret too')
  t.equal((await testEventVerified(without, receiver, hook)).type, 'webhook.test', 'the former key has left: deliveries are still signed')
  await without.close()

  const lost = await reseal({ ...common, SEALING_KEY: 'c'.repeat(40) })
  t.equal(lost.code, 1, 'a value no key opens fails the command')
  t.match(lost.stderr, /3 sealed values are opened by no key of the ring: add the key they were sealed under to SEALING_PREVIOUS_KEYS/)
})
