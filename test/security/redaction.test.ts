import fc from 'fast-check'
import t from 'tap'
import { REDACTED, redact, redactHeaders, redactUrl } from '../../src/security/redaction.js'

t.test('sensitive keys are redacted at any depth, in any case, arrays included', async (t) => {
  const input = {
    email: 'a@b.co',
    Password: 'hunter2',
    nested: { refresh_token: 'rt', deeper: [{ API_KEY: 'k', ok: 1 }, { clientSecret: 's' }] },
    headers: { Authorization: 'Bearer x', cookie: 'sid=1', 'x-request-id': 'r' },
    list: [[{ accessToken: 'a' }]]
  }
  t.same(redact(input), {
    email: 'a@b.co',
    Password: REDACTED,
    nested: { refresh_token: REDACTED, deeper: [{ API_KEY: REDACTED, ok: 1 }, { clientSecret: REDACTED }] },
    headers: { Authorization: REDACTED, cookie: REDACTED, 'x-request-id': 'r' },
    list: [[{ accessToken: REDACTED }]]
  })
  t.equal(input.Password, 'hunter2', 'the input is not modified')
})

t.test('a sensitive key hides its whole value, objects included', async (t) => {
  t.same(redact({ secret: { a: 1 }, tokens: ['a', 'b'] }), { secret: REDACTED, tokens: REDACTED })
})

t.test('cycles and excessive depth are cut, not followed', async (t) => {
  const cyclic: Record<string, unknown> = { name: 'loop' }
  cyclic.self = cyclic
  t.same(redact(cyclic), { name: 'loop', self: '[Circular]' })
  let deep: Record<string, unknown> = { password: 'p' }
  for (let level = 0; level < 100; level++) deep = { next: deep }
  t.notMatch(JSON.stringify(redact(deep)), /"p"/)
})

t.test('request headers are redacted by name, values kept as they are otherwise', async (t) => {
  const headers = { authorization: 'Bearer abc', cookie: 'sid=1', 'x-api-key': 'k', accept: 'application/json', 'x-forwarded-for': ['a', 'b'] }
  t.same(redactHeaders(headers), { authorization: REDACTED, cookie: REDACTED, 'x-api-key': REDACTED, accept: 'application/json', 'x-forwarded-for': ['a', 'b'] })
  t.equal(headers.authorization, 'Bearer abc', 'the request itself is untouched')
})

t.test('header values with a query string have its sensitive parameters redacted', async (t) => {
  const headers = { referer: 'https://app.example/cb?access_token=LEAKED&x=1', 'x-original-url': '/x?password=LEAKED2', via: ['/a?api_key=LEAKED3', '/b'] }
  t.same(redactHeaders(headers), {
    referer: `https://app.example/cb?access_token=${REDACTED}&x=1`,
    'x-original-url': `/x?password=${REDACTED}`,
    via: [`/a?api_key=${REDACTED}`, '/b']
  })
})

t.test('query parameters with sensitive names are redacted in URLs', async (t) => {
  t.equal(redactUrl('/cb?code=abc&state=s&access_token=xyz&provider=github'), `/cb?code=${REDACTED}&state=${REDACTED}&access_token=${REDACTED}&provider=github`)
  t.equal(redactUrl('/path'), '/path')
  t.equal(redactUrl('/x?Refresh%5FToken=1&b'), `/x?Refresh%5FToken=${REDACTED}&b`)
  t.equal(redactUrl('/x?%zz=1'), '/x?%zz=1', 'malformed escapes do not throw')
})

t.test('OAuth parameters, one-time passwords, sessions and CSRF tokens are redacted too', async (t) => {
  const secret = ['code', 'State', 'nonce', 'code_verifier', 'oauth_state', 'x-oauth-code', 'totp', 'OTP_CODE', 'sessionId', 'session', 'X-CSRF', 'csrfToken']
  const kept = { provider: 'github', method: 'totp', postcode: 'EC1A', statement: 'kept', status: 'published', error_description: 'kept' }
  const input = { ...Object.fromEntries(secret.map((name, index) => [name, `value-${index}`])), ...kept }
  t.same(redact(input), { ...Object.fromEntries(secret.map((name) => [name, REDACTED])), ...kept },
    'the OAuth words as a name or a word of one, not inside another word; values are never looked at')
  t.equal(redactUrl('/api/v1/auth/oauth/github/callback?code=SECRET1&state=SECRET2&iss=https%3A%2F%2Fid.example'),
    `/api/v1/auth/oauth/github/callback?code=${REDACTED}&state=${REDACTED}&iss=https%3A%2F%2Fid.example`)
  t.equal(redactUrl('/x?Code_Verifier=v&NONCE=n&otp=1&session_id=s&csrf=c&sort=-created_at'),
    `/x?Code_Verifier=${REDACTED}&NONCE=${REDACTED}&otp=${REDACTED}&session_id=${REDACTED}&csrf=${REDACTED}&sort=-created_at`)
  t.same(redactHeaders({ 'x-csrf-token': 'CS3', 'x-xsrf-token': 'CS4', 'x-session-id': 'SID3', 'x-otp': '111111', 'x-oauth-state': 'S3', 'user-agent': 'ua' }),
    { 'x-csrf-token': REDACTED, 'x-xsrf-token': REDACTED, 'x-session-id': REDACTED, 'x-otp': REDACTED, 'x-oauth-state': REDACTED, 'user-agent': 'ua' })
  t.same(redactHeaders({ referer: 'https://app.example/cb?code=C3&state=S4&page=2' }), { referer: `https://app.example/cb?code=${REDACTED}&state=${REDACTED}&page=2` },
    'in a header value\'s query string')
})

t.test('fuzzed objects never leak a value stored under a sensitive key', async (t) => {
  const containing = fc.tuple(
    fc.constantFrom('password', 'TOKEN', 'Secret', 'key', 'authorization', 'Cookie', 'otp', 'Session', 'CSRF'),
    fc.string({ maxLength: 4 }),
    fc.string({ maxLength: 4 })
  ).map(([word, before, after]) => `${before}${word}${after}`)
  const asWord = fc.tuple(
    fc.constantFrom('code', 'STATE', 'Nonce', 'code_verifier'),
    fc.constantFrom('', 'oauth_', 'x-', 'a.'),
    fc.constantFrom('', '_param', '-id', ' ')
  ).map(([word, before, after]) => `${before}${word}${after}`)
  const sensitiveName = fc.oneof(containing, asWord)
  const secret = fc.string({ minLength: 8, maxLength: 16 }).map((text) => `SECRET<${text}>`)
  const tree = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.integer(),
      fc.string({ maxLength: 8 }),
      fc.array(tie('node'), { maxLength: 4 }),
      fc.dictionary(fc.string({ maxLength: 8 }), tie('node'), { maxKeys: 4 }),
      fc.tuple(sensitiveName, secret).map(([name, value]) => ({ [name]: value }))
    )
  })).node
  fc.assert(fc.property(tree, (value) => !JSON.stringify(redact(value)).includes('SECRET<')), { numRuns: 500 })
  t.pass('500 random trees')
})
