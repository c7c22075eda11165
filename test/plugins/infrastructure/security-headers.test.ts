import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { SECURITY_HEADERS, build } from '../../helpers/app.js'

function assertHeaders (t: Test, response: LightMyRequestResponse, label: string) {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) t.equal(response.headers[name], value, `${label}: ${name}`)
  t.notOk('server' in response.headers, `${label}: no Server`)
  t.notOk('x-powered-by' in response.headers, `${label}: no X-Powered-By`)
  for (const extra of ['cross-origin-opener-policy', 'referrer-policy', 'x-dns-prefetch-control', 'origin-agent-cluster']) {
    t.notOk(extra in response.headers, `${label}: no ${extra} (exactly the documented set)`)
  }
}

t.test('security headers on every kind of response', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '2' } })
  const account = await createAccount(app)
  assertHeaders(t, await app.inject({ method: 'GET', url: '/health' }), 'health')
  assertHeaders(t, await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' })), 'success')
  assertHeaders(t, await app.inject({ method: 'POST', url: '/api/v1/users', payload: {} }), 'validation error')
  assertHeaders(t, await app.inject({ method: 'GET', url: '/api/v1/users' }), '401')
  assertHeaders(t, await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': 'text/plain' }, payload: 'x' }), '415')
  assertHeaders(t, await app.inject({ method: 'GET', url: '/missing', remoteAddress: '198.51.100.200' }), '404')
  await app.inject({ method: 'GET', url: '/missing', remoteAddress: '198.51.100.201' })
  await app.inject({ method: 'GET', url: '/missing', remoteAddress: '198.51.100.201' })
  const limited = await app.inject({ method: 'GET', url: '/missing', remoteAddress: '198.51.100.201' })
  t.equal(limited.statusCode, 429)
  assertHeaders(t, limited, '429')
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/users',
    headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' }
  })
  t.equal(preflight.statusCode, 204)
  assertHeaders(t, preflight, 'preflight')
})

t.test('500s carry the headers too', async (t) => {
  const app = await build(t, { extend: (app) => { app.get('/boom', async () => { throw new Error('boom') }) } })
  const response = await app.inject({ method: 'GET', url: '/boom' })
  t.equal(response.statusCode, 500)
  assertHeaders(t, response, '500')
})
