import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { stateCookie, uniqueEmail } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { providerFor, type TestProvider } from '../../helpers/servers/oauth-provider.js'

const REDIRECT = 'https://api.example/api/v1/auth/oauth/google/callback'
const PROXY = '10.0.0.1'
/** A request the trusted proxy forwards from an HTTPS client (docs/operations.md, "Proxies and client addresses"). */
const HTTPS = { remoteAddress: PROXY, headers: { 'x-forwarded-proto': 'https' } }
const HTTP = { remoteAddress: '127.0.0.1', headers: {} }

type Transport = typeof HTTPS | typeof HTTP

/** /authorize over `transport`: the answer, its state and the provider's code for that flow. */
async function started (app: FastifyInstance, provider: TestProvider, transport: Transport) {
  const authorize = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/google/authorize', ...transport })
  const location = new URL(String(authorize.headers.location))
  const code = provider.approve(location.searchParams.get('code_challenge') ?? '', { sub: uniqueEmail('subject'), email: uniqueEmail(), email_verified: true })
  return { authorize, state: location.searchParams.get('state') ?? '', code }
}

function callback (app: FastifyInstance, flow: { state: string, code: string }, cookie: string, transport: Transport) {
  return app.inject({ method: 'GET', url: `/api/v1/auth/oauth/google/callback?code=${flow.code}&state=${flow.state}`, remoteAddress: transport.remoteAddress, headers: { ...transport.headers, cookie } })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const { provider, env } = await providerFor(t, 'google', REDIRECT)
    const app = await build(t, { postgresUrl: backend.url, env: { ...env, TRUST_PROXY: PROXY } })

    t.test('over HTTPS the state cookie is __Host- prefixed, Secure, Path=/, and the callback takes it', async (t) => {
      const flow = await started(app, provider, HTTPS)
      t.match(flow.authorize.headers['set-cookie'], new RegExp(`^__Host-oauth_state=${flow.state}; Max-Age=600; Path=/; HttpOnly; Secure; SameSite=Lax$`))
      const finished = await callback(app, flow, stateCookie(flow.authorize), HTTPS)
      t.equal(finished.statusCode, 200, finished.body)
      t.equal(finished.json().data.token_type, 'Bearer')
      t.match(finished.headers['set-cookie'], /^__Host-oauth_state=; Max-Age=0; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Lax$/, 'the callback clears it')
    })

    t.test('over plain http (local development) the plain name still works', async (t) => {
      const flow = await started(app, provider, HTTP)
      t.match(flow.authorize.headers['set-cookie'], new RegExp(`^oauth_state=${flow.state}; Max-Age=600; Path=/api/v1/auth/oauth; HttpOnly; SameSite=Lax$`))
      const finished = await callback(app, flow, `oauth_state=${flow.state}`, HTTP)
      t.equal(finished.statusCode, 200, finished.body)
    })

    t.test('over HTTPS a plain-named state cookie is not accepted', async (t) => {
      const flow = await started(app, provider, HTTPS)
      const refused = await callback(app, flow, `oauth_state=${flow.state}`, HTTPS)
      t.equal(refused.statusCode, 400)
      t.equal(refused.json().error.code, 'INVALID_OAUTH_STATE')
      t.equal((await callback(app, flow, `__Host-oauth_state=${flow.state}`, HTTPS)).statusCode, 200, 'the refusal did not spend the state')
    })

    t.test('X-Forwarded-Proto from a sender that is not a trusted proxy is ignored', async (t) => {
      const authorize = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/google/authorize', remoteAddress: '203.0.113.9', headers: { 'x-forwarded-proto': 'https' } })
      t.match(authorize.headers['set-cookie'], /^oauth_state=[^;]+; Max-Age=600; Path=\/api\/v1\/auth\/oauth; HttpOnly; SameSite=Lax$/)
    })
  })
}
