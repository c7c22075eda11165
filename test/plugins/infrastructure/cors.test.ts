import t from 'tap'
import { build } from '../../helpers/app.js'

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
  t.notOk('access-control-allow-methods' in refusedPreflight.headers, 'a refused origin learns nothing of the API')
})

t.test('preflights are answered before rate limits and authentication, with an empty 204', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '1' } })
  const headers = { origin: 'http://localhost:3000', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'authorization' }
  for (let n = 0; n < 3; n++) {
    const preflight = await app.inject({ method: 'OPTIONS', url: '/api/v1/users/anything', headers })
    t.equal(preflight.statusCode, 204, `preflight ${n + 1} is not counted against the limit`)
    t.equal(preflight.headers['content-length'], '0')
    t.equal(preflight.body, '')
    t.equal(preflight.headers['access-control-max-age'], '600')
    t.notOk('x-ratelimit-limit' in preflight.headers)
  }
})

t.test('a response to a request from an allowed origin exposes the headers clients read', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'http://localhost:3000' } })
  t.equal(response.headers['access-control-allow-origin'], 'http://localhost:3000')
  t.match(response.headers['access-control-expose-headers'], /X-RateLimit-Remaining/)
  t.match(response.headers['access-control-expose-headers'], /Retry-After/)
})

t.test('requests without Origin carry Vary: Origin and no CORS headers', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'GET', url: '/health' })
  t.equal(response.headers.vary, 'Origin', 'a shared cache keeps this answer apart from cross-origin ones')
  t.same(Object.keys(response.headers).filter((name) => name.startsWith('access-control-')), [])
})

t.test('OPTIONS that is not a preflight is an unknown route, in the error envelope', async (t) => {
  const app = await build(t)
  for (const headers of [{}, { origin: 'http://localhost:3000' }]) {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/users', headers })
    t.equal(response.statusCode, 404)
    t.equal(response.json().error.code, 'NOT_FOUND')
  }
})

t.test('unset CORS_ORIGINS allows every origin (with a start-up warning)', async (t) => {
  const app = await build(t, { env: { CORS_ORIGINS: '' } })
  const response = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://anywhere.example' } })
  t.ok(['*', 'https://anywhere.example'].includes(String(response.headers['access-control-allow-origin'])))
  t.match(app.config.warnings.join('\n'), /CORS_ORIGINS is unset/)
})

/** The access-control headers of an answer (and Vary), to compare whole. */
function corsHeaders (headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'))
}

t.test('an allow-list echoes listed origins only, with exactly the headers of the policy', async (t) => {
  const app = await build(t, { env: { CORS_ORIGINS: 'https://app.example.com' } })
  const get = async (origin: string) => corsHeaders((await app.inject({ method: 'GET', url: '/health', headers: { origin } })).headers)
  const preflight = async (origin: string) => corsHeaders((await app.inject({ method: 'OPTIONS', url: '/api/v1/users', headers: { origin, 'access-control-request-method': 'PATCH' } })).headers)
  t.same(await get('https://app.example.com'), {
    vary: 'Origin',
    'access-control-allow-origin': 'https://app.example.com',
    'access-control-expose-headers': 'Location, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset'
  })
  t.same(await preflight('https://app.example.com'), {
    vary: 'Origin',
    'access-control-allow-origin': 'https://app.example.com',
    'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
    'access-control-allow-headers': 'Authorization, Content-Type, X-Device-Id',
    'access-control-max-age': '600'
  })
  for (const origin of ['https://app.example.com.evil.net', 'null', 'https://evil.example.net']) {
    t.same(await get(origin), { vary: 'Origin' }, `${origin}: no access-control header (exact match, not a prefix; the opaque origin is not listed)`)
    t.same(await preflight(origin), { vary: 'Origin' }, `${origin}: its preflight learns nothing beyond Vary`)
  }
})

t.test('without an allow-list every origin is echoed, never a wildcard, without credentials', async (t) => {
  const app = await build(t, { env: { CORS_ORIGINS: '' } })
  const response = await app.inject({ method: 'GET', url: '/health', headers: { origin: 'https://anywhere.example' } })
  t.equal(response.headers['access-control-allow-origin'], 'https://anywhere.example')
  const preflight = await app.inject({ method: 'OPTIONS', url: '/api/v1/users', headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' } })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://anywhere.example')
  t.notOk('access-control-allow-credentials' in preflight.headers, 'no credentials: bearer tokens only')
})

t.test('a preflight is OPTIONS with Access-Control-Request-Method', async (t) => {
  const app = await build(t)
  const origin = 'http://localhost:3000'
  const preflight = await app.inject({ method: 'OPTIONS', url: '/health', headers: { origin, 'access-control-request-method': 'GET' } })
  t.equal(preflight.statusCode, 204)
  const options = await app.inject({ method: 'OPTIONS', url: '/health', headers: { origin } })
  t.equal(options.statusCode, 404, 'OPTIONS without it is no preflight')
  t.equal(options.headers['access-control-allow-origin'], origin, 'but an ordinary request from the origin')
  t.equal(options.json().error.code, 'NOT_FOUND')
  t.notOk('access-control-allow-methods' in options.headers)
  const get = await app.inject({ method: 'GET', url: '/health', headers: { origin, 'access-control-request-method': 'GET' } })
  t.equal(get.statusCode, 200, 'another method with it is no preflight either')
  t.notOk('access-control-allow-methods' in get.headers)
})

t.test('a refused origin\'s preflight is an unknown route: counted, and over the limit a 429 in the error envelope', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_MAX: '1' } })
  const preflight = () => app.inject({ method: 'OPTIONS', url: '/api/v1/users', remoteAddress: '198.51.100.9', headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'GET' } })
  const first = await preflight()
  t.equal(first.statusCode, 404)
  t.equal(first.json().error.code, 'NOT_FOUND')
  const limited = await preflight()
  t.equal(limited.statusCode, 429)
  t.same(limited.json(), { error: { code: 'RATE_LIMITED', message: 'Rate limit exceeded' } })
})
