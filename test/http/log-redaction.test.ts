import { createHash, randomBytes } from 'node:crypto'
import t from 'tap'
import { uniqueEmail } from '../helpers/accounts.js'
import { backends } from '../helpers/database.js'
import { buildLogged } from '../helpers/log-capture.js'
import { providerFor } from '../helpers/servers/oauth-provider.js'

const REDIRECT = 'http://127.0.0.1:3000/api/v1/auth/oauth/github/callback'
const APP = 'http://127.0.0.1:5173/signed-in'

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('OAuth codes, state, verifiers and secrets in headers, cookies and bodies reach neither the request log nor the audit log', async (t) => {
      const { provider, env } = await providerFor(t, 'github', REDIRECT)
      const { app, text, entries } = await buildLogged(t, { postgresUrl: backend.url, env: { ...env, OAUTH_REDIRECT_URLS: 'http://127.0.0.1:5173' } })
      const secrets = new Map<string, string>()
      const secret = (name: string) => {
        const value = `${name}-${randomBytes(12).toString('hex')}`
        secrets.set(name, value)
        return value
      }
      const headers = {
        'x-csrf-token': secret('csrf-header'),
        'x-session-id': secret('session-header'),
        'x-otp': secret('otp-header'),
        'x-oauth-state': secret('state-header'),
        referer: `${APP}?code=${secret('referer-code')}&state=${secret('referer-state')}`
      }

      // A browser application's whole sign-in: /authorize, the provider, the callback, the exchange.
      const verifier = secret('verifier').padEnd(43, 'v')
      const challenge = createHash('sha256').update(verifier).digest('base64url')
      const authorize = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/github/authorize?redirect_to=${encodeURIComponent(APP)}&code_challenge=${challenge}&code_challenge_method=S256` })
      t.equal(authorize.statusCode, 302, authorize.body)
      const location = new URL(String(authorize.headers.location))
      const state = location.searchParams.get('state') ?? ''
      secrets.set('state', state)
      const providerCode = provider.approve(location.searchParams.get('code_challenge') ?? '', { id: 4242, login: 'octo', name: 'Octo Cat', email: null },
        [{ email: uniqueEmail('octo'), primary: true, verified: true }])
      secrets.set('the provider\'s code', providerCode)
      const callback = await app.inject({
        method: 'GET',
        url: `/api/v1/auth/oauth/github/callback?code=${providerCode}&state=${state}`,
        headers: { ...headers, cookie: `oauth_state=${state}; session=${secret('session-cookie')}; csrf=${secret('csrf-cookie')}` }
      })
      t.equal(callback.statusCode, 302, callback.body)
      const oneTimeCode = new URL(String(callback.headers.location)).searchParams.get('code') ?? ''
      secrets.set('the one-time code', oneTimeCode)
      const exchange = await app.inject({ method: 'POST', url: '/api/v1/auth/oauth/exchange', headers, payload: { code: oneTimeCode, code_verifier: verifier } })
      t.equal(exchange.statusCode, 200, 'the exchange signs in')

      // Refused ones: a forged callback, a body with a nonce it may not have.
      const forged = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/github/callback?code=${secret('forged-code')}&state=${secret('forged-state')}`, headers })
      t.equal(forged.json().error.code, 'INVALID_OAUTH_STATE')
      const withNonce = await app.inject({ method: 'POST', url: '/api/v1/auth/oauth/exchange', headers, payload: { code: secret('bad-code'), code_verifier: secret('bad-verifier').padEnd(43, 'v'), nonce: secret('nonce') } })
      t.equal(withNonce.statusCode, 400)

      const audit = JSON.stringify(await app.database.db.selectFrom('audit_logs').selectAll().execute())
      await app.close()
      const log = await text()
      const callbacks = (await entries()).filter((entry) => entry.msg === 'request completed' && String((entry.req as { url: string }).url).includes('/callback'))
      t.same(callbacks.map((entry) => (entry.req as { url: string }).url), [
        '/api/v1/auth/oauth/github/callback?code=[REDACTED]&state=[REDACTED]',
        '/api/v1/auth/oauth/github/callback?code=[REDACTED]&state=[REDACTED]'
      ], 'both callbacks are logged, code and state redacted')
      t.match(callbacks[0]?.req, { headers: { cookie: '[REDACTED]', 'x-csrf-token': '[REDACTED]', 'x-session-id': '[REDACTED]', 'x-otp': '[REDACTED]', 'x-oauth-state': '[REDACTED]', referer: `${APP}?code=[REDACTED]&state=[REDACTED]` } }, 'and the secrets in their headers')
      t.ok(audit.includes('user.created'), 'the sign-in was audited')
      for (const [name, value] of secrets) {
        t.notOk(log.includes(value), `not in the log: ${name}`)
        t.notOk(audit.includes(value), `not in the audit log: ${name}`)
      }
    })
  })
}
