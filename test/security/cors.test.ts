import t from 'tap'
import { CorsPolicy, isPreflight, VARY_ORIGIN } from '../../src/security/cors.js'

t.test('an allow-list echoes listed origins only', async (t) => {
  const policy = new CorsPolicy(['https://app.example.com'])
  t.ok(policy.allows('https://app.example.com'))
  t.notOk(policy.allows('https://app.example.com.evil.net'), 'exact match, not a prefix')
  t.notOk(policy.allows('null'), 'the opaque origin is not listed')
  t.same(policy.responseHeaders('https://app.example.com'), {
    vary: 'Origin',
    'access-control-allow-origin': 'https://app.example.com',
    'access-control-expose-headers': 'Location, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset'
  })
  t.same(policy.responseHeaders('https://evil.example.net'), VARY_ORIGIN, 'a refused origin gets no access-control header')
  t.same(policy.preflightHeaders('https://evil.example.net'), VARY_ORIGIN)
  t.same(policy.preflightHeaders('https://app.example.com'), {
    vary: 'Origin',
    'access-control-allow-origin': 'https://app.example.com',
    'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
    'access-control-allow-headers': 'Authorization, Content-Type, X-Device-Id',
    'access-control-max-age': '600'
  })
})

t.test('without an allow-list every origin is echoed, never a wildcard', async (t) => {
  const policy = new CorsPolicy(null)
  t.equal(policy.responseHeaders('https://anywhere.example')['access-control-allow-origin'], 'https://anywhere.example')
  t.notOk('access-control-allow-credentials' in policy.preflightHeaders('https://anywhere.example'), 'no credentials: bearer tokens only')
})

t.test('a preflight is OPTIONS with Access-Control-Request-Method', async (t) => {
  t.ok(isPreflight('OPTIONS', 'PATCH'))
  t.notOk(isPreflight('OPTIONS', undefined))
  t.notOk(isPreflight('GET', 'PATCH'))
})
