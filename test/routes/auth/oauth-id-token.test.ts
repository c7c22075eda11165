import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { stateCookie, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import type { TestContext } from '../../helpers/context.js'
import { backends } from '../../helpers/database.js'
import { TestProvider, type ProviderMode } from '../../helpers/servers/oauth-provider.js'
import { spawnService } from '../../helpers/process.js'

const REDIRECT = 'http://127.0.0.1:3000/api/v1/auth/oauth/idp/callback'

/** A provider configured by its issuer, served by the test provider in its OpenID shape. */
async function issuerProvider (t: TestContext) {
  const provider = await new TestProvider({ id: 'idp-client', secret: 'idp-secret', redirectUri: REDIRECT, openId: true }).start()
  t.teardown(async () => await provider.stop())
  const env = {
    OAUTH_PROVIDERS: 'idp',
    OAUTH_IDP_ISSUER: provider.base,
    OAUTH_IDP_CLIENT_ID: 'idp-client',
    OAUTH_IDP_CLIENT_SECRET: 'idp-secret',
    OAUTH_IDP_REDIRECT_URI: REDIRECT
  }
  return { provider, env }
}

/** /authorize, approval at the provider (for the request's nonce, unless another is given), the callback. */
async function signIn (app: FastifyInstance, provider: TestProvider, profile: Record<string, unknown>, nonce?: string) {
  const authorize = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/idp/authorize' })
  if (authorize.statusCode !== 302) return { authorize, nonce: '', callback: authorize }
  const location = new URL(String(authorize.headers.location))
  const sent = location.searchParams.get('nonce') ?? ''
  const code = provider.approve(location.searchParams.get('code_challenge') ?? '', profile, undefined, nonce ?? sent)
  const state = location.searchParams.get('state') ?? ''
  const cookie = stateCookie(authorize)
  const callback = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/idp/callback?code=${code}&state=${state}`, headers: { cookie } })
  return { authorize, nonce: sent, callback }
}

const userCount = async (app: FastifyInstance) => Number((await app.database.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('an ID token that is not the provider\'s, not for this flow, or not signed is refused with 502, and creates nothing', async (t) => {
      const { provider, env } = await issuerProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const ok = await signIn(app, provider, { sub: 'first', email: uniqueEmail(), email_verified: true })
      t.equal(ok.callback.statusCode, 200, ok.callback.body)
      const before = await userCount(app)
      const cases: Array<[ProviderMode, RegExp]> = [
        ['id-token-wrong-iss', /iss claim/],
        ['id-token-other-key', /ERR_JWKS_NO_MATCHING_KEY|ERR_JWS_SIGNATURE_VERIFICATION_FAILED/],
        ['id-token-alg-none', /refused/],
        ['id-token-missing', /no ID token/]
      ]
      for (const [mode, message] of cases) {
        provider.mode = mode
        const { callback } = await signIn(app, provider, { sub: mode, email: uniqueEmail(), email_verified: true })
        t.equal(callback.statusCode, 502, mode)
        t.equal(callback.json().error.code, 'OAUTH_PROVIDER_ERROR', mode)
        t.match(callback.json().error.message, message, mode)
      }
      provider.mode = 'ok'
      const replayed = await signIn(app, provider, { sub: 'replay', email: uniqueEmail(), email_verified: true }, ok.nonce)
      t.equal(replayed.callback.statusCode, 502, 'an ID token carrying an earlier flow\'s nonce')
      t.match(replayed.callback.json().error.message, /nonce/)
      const wrongAzp = await signIn(app, provider, { sub: 'azp', email: uniqueEmail(), email_verified: true, azp: 'another-client' })
      t.equal(wrongAzp.callback.statusCode, 502, 'an ID token issued to another client (azp)')
      t.equal(await userCount(app), before, 'no user was created')
    })

    t.test('the profile comes from the validated ID token, without reading userinfo', async (t) => {
      const { provider, env } = await issuerProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const email = uniqueEmail()
      const { callback } = await signIn(app, provider, { sub: 'from-token', email, email_verified: true, name: 'Token Name' })
      t.equal(callback.statusCode, 200, callback.body)
      t.notOk(provider.requests.some((request) => request.path === '/userinfo'), 'userinfo was not needed')
      const me = (await app.inject(withToken(callback.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data
      t.match(me, { email, name: 'Token Name', email_verified: true })
    })

    t.test('discovery: a document that fails, is malformed, too large, or names another issuer is 502; a later good read is used', async (t) => {
      const { provider, env } = await issuerProvider(t)
      provider.oversizedBytes = 1024 * 1024
      const modes: ProviderMode[] = ['discovery-5xx', 'discovery-malformed', 'discovery-oversized', 'discovery-other-issuer']
      provider.mode = modes[0] ?? 'ok'
      const app = await build(t, { postgresUrl: backend.url, env })
      for (const mode of modes) {
        provider.mode = mode
        const response = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/idp/authorize' })
        t.equal(response.statusCode, 502, mode)
        t.equal(response.json().error.code, 'OAUTH_PROVIDER_ERROR', mode)
        t.notOk(response.cookies.some((cookie) => cookie.name === 'oauth_state'), `${mode}: no flow started`)
      }
      provider.mode = 'ok'
      const recovered = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/idp/authorize' })
      t.equal(recovered.statusCode, 302, 'the provider is used as soon as its document can be read')
      t.equal(new URL(String(recovered.headers.location)).origin, provider.base)
      const reads = provider.requests.filter((request) => request.path === '/.well-known/openid-configuration').length
      provider.mode = 'discovery-5xx'
      t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/idp/authorize' })).statusCode, 302, 'a document read within the hour is served from memory')
      t.equal(provider.requests.filter((request) => request.path === '/.well-known/openid-configuration').length, reads, 'not read again')
    })
  })
}

t.test('a provider whose discovery document cannot be read is reported at start-up; the service starts anyway', async (t) => {
  const { provider, env } = await issuerProvider(t)
  provider.mode = 'discovery-5xx'
  const service = spawnService(t, { ...env, DATABASE_URL: 'sqlite://:memory:', PORT: '0', LOG_LEVEL: 'info' })
  // Both awaited from the start: discovery runs beside start-up, so either may be logged first.
  const [report, listening] = await Promise.all([
    service.nextLog((entry) => entry.provider === 'idp'),
    service.nextLog((entry) => String(entry.msg).startsWith('Server listening at '))
  ])
  t.match(report, { level: 40, provider: 'idp', reason: /HTTP 503/, msg: /OAuth provider unavailable/ })
  t.ok(listening, 'it listens')
})
