import t from 'tap'
import { build } from '../helper.js'

t.test('CORS_ORIGINS: listed origins are allowed, others get no allow header', async (t) => {
  const app = await build(t, { env: { CORS_ORIGINS: 'https://app.example.com,https://admin.example.com' } })
  const allowed = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://admin.example.com' } })
  t.equal(allowed.headers['access-control-allow-origin'], 'https://admin.example.com')
  t.match(allowed.headers.vary, /Origin/)
  const refused = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://evil.example.net' } })
  t.notOk('access-control-allow-origin' in refused.headers)

  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/users',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization,content-type' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
  t.match(preflight.headers['access-control-allow-methods'], /PATCH/)
  t.match(String(preflight.headers['access-control-allow-headers']).toLowerCase(), /authorization/)
  const refusedPreflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/users',
    headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'DELETE' }
  })
  t.notOk('access-control-allow-origin' in refusedPreflight.headers)
})

t.test('unset CORS_ORIGINS allows every origin (with a start-up warning)', async (t) => {
  const app = await build(t, { env: { CORS_ORIGINS: '' } })
  const response = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://anywhere.example' } })
  t.ok(['*', 'https://anywhere.example'].includes(String(response.headers['access-control-allow-origin'])))
  t.match(app.config.warnings.join('\n'), /CORS_ORIGINS is unset/)
})
