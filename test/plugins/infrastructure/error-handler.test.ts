import { STATUS_CODES } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import t from 'tap'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { SECURITY_HEADERS, build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

t.test('unknown routes answer the 404 envelope', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'GET', url: '/api/v1/nothing?x=1' })
  t.equal(response.statusCode, 404)
  t.match(response.headers['content-type'], /application\/json/)
  t.same(response.json(), { error: { code: 'NOT_FOUND', message: 'Route GET /api/v1/nothing not found' } })
})

t.test('a known path asked with another method answers 405 with Allow; OPTIONS without a preflight stays a 404', async (t) => {
  const app = await build(t)
  const put = await app.inject({ method: 'PUT', url: '/api/v1/users?x=1' })
  t.equal(put.statusCode, 405)
  t.equal(put.headers.allow, 'GET, HEAD, POST')
  t.same(put.json(), { error: { code: 'METHOD_NOT_ALLOWED', message: 'Method PUT not allowed on /api/v1/users' } })
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) t.equal(put.headers[name], value, name)
  const post = await app.inject({ method: 'POST', url: '/api/v1/users/01890000-0000-7000-8000-000000000000' })
  t.equal(post.statusCode, 405)
  t.equal(post.headers.allow, 'GET, HEAD, PUT, PATCH, DELETE')
  const both = await app.inject({ method: 'PUT', url: '/api/v1/auth/passkeys/authentication' })
  t.equal(both.statusCode, 405)
  t.same(both.headers.allow?.toString().split(', ').sort(), ['DELETE', 'PATCH', 'POST'], 'a path a static and a parametric route both match allows the methods of both')
  const deeper = await app.inject({ method: 'POST', url: '/api/v1/users/a/b' })
  t.equal(deeper.statusCode, 404, 'a path no route has')
  t.notOk('allow' in deeper.headers)
  const options = await app.inject({ method: 'OPTIONS', url: '/api/v1/users' })
  t.equal(options.statusCode, 404)
  t.equal(options.json().error.code, 'NOT_FOUND')
})

t.test('unexpected failures answer 500 with the generic text; the cause goes only to the log', async (t) => {
  const logged: string[] = []
  const app = await build(t, {
    extend: (app) => {
      app.get('/boom', async () => {
        throw new Error('SELECT secret FROM internals at /srv/app.js:1')
      })
      app.get('/boom-with-status', async () => {
        throw Object.assign(new Error('library detail'), { statusCode: 502, code: 'ESOMETHING' })
      })
      app.addHook('onError', async (_request, _reply, error) => { logged.push(error.message) })
    }
  })
  for (const url of ['/boom', '/boom-with-status']) {
    const response = await app.inject({ method: 'GET', url })
    t.equal(response.statusCode, 500, url)
    t.same(response.json(), { error: { code: 'INTERNAL_ERROR', message: 'Internal server error' } })
    t.notMatch(response.body, /secret|internals|library|stack|\.js/)
  }
  t.same(logged, ['SELECT secret FROM internals at /srv/app.js:1', 'library detail'], 'the cause reached the error pipeline')
})

t.test('validation failures list every problem with its path', async (t) => {
  const app = await build(t)
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/users',
    payload: { email: 'not-an-email', name: 'A', password: 'short', role: 'admin' }
  })
  t.equal(response.statusCode, 400)
  const { error } = response.json()
  t.equal(error.code, 'VALIDATION_FAILED')
  t.equal(error.message, 'Validation failed')
  t.same(error.details.map((detail: { path: string }) => detail.path).sort(), ['/email', '/name', '/password', '/role'])
  const missing = await app.inject({ method: 'POST', url: '/api/v1/users', payload: {} })
  t.same(missing.json().error.details.map((detail: { path: string }) => detail.path).sort(), ['/email', '/name', '/password'])
  t.match(missing.json().error.details[0].message, 'is required')
})

t.test('JSON bodies are not coerced: a number is not a string', async (t) => {
  const app = await build(t)
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/users',
    payload: { email: 'n@example.com', name: 12345, password: 12345678 }
  })
  t.equal(response.statusCode, 400)
  t.same(response.json().error.details.map((detail: { path: string }) => detail.path).sort(), ['/name', '/password'])
})

t.test('malformed JSON, empty JSON and prototype poisoning are 400 VALIDATION_FAILED', async (t) => {
  const app = await build(t)
  for (const payload of ['{"email":', '', '{"__proto__":{"admin":true},"email":"a@b.co","name":"Al","password":"password1"}']) {
    const response = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': 'application/json' }, payload })
    t.equal(response.statusCode, 400, JSON.stringify(payload))
    t.equal(response.json().error.code, 'VALIDATION_FAILED')
    t.equal(response.json().error.message, 'Validation failed')
    t.notMatch(response.body, /FST_|Unexpected token|SyntaxError/)
  }
})

t.test('bodies over 10240 bytes are 413; exactly 10240 is accepted', async (t) => {
  const app = await build(t)
  const body = (size: number) => {
    const base = JSON.stringify({ email: 'big@example.com', name: 'Big', password: 'password1', pad: '' })
    return base.replace('"pad":""', `"pad":"${'x'.repeat(size - base.length)}"`)
  }
  t.equal(body(10240).length, 10240)
  const atLimit = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': 'application/json' }, payload: body(10240) })
  t.equal(atLimit.statusCode, 400, 'parsed (then refused for the unknown pad property)')
  t.equal(atLimit.json().error.details[0].path, '/pad')
  const over = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': 'application/json' }, payload: body(10241) })
  t.equal(over.statusCode, 413)
  t.same(over.json(), { error: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 10240 bytes' } })
})

t.test('non-JSON bodies are 415', async (t) => {
  const app = await build(t)
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const response = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': contentType }, payload: 'email=a' })
    t.equal(response.statusCode, 415, contentType)
    t.equal(response.json().error.code, 'UNSUPPORTED_MEDIA_TYPE')
  }
})

t.test('storage failures answer 503 SERVICE_UNAVAILABLE and the process stays up', async (t) => {
  const app = await build(t, {
    extend: (app) => {
      app.get('/db-down', async () => {
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
      })
    }
  })
  const response = await app.inject({ method: 'GET', url: '/db-down' })
  t.equal(response.statusCode, 503)
  t.same(response.json(), { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: database unreachable' } })
  t.equal(response.headers['retry-after'], '1')
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200)
})

t.test('URLs the router cannot take answer the envelope with the security headers', async (t) => {
  const app = await build(t)
  for (const url of ['/api/v1/users/%zz', '/api/v1/users/%', '/api/v1/posts/%ED%A0%80', `/api/v1/users/${'a'.repeat(257)}/roles`]) {
    const response = await app.inject({ method: 'GET', url })
    t.equal(response.statusCode, 400, url)
    t.same(response.json(), { error: { code: 'VALIDATION_FAILED', message: 'Validation failed', details: [{ path: '', message: 'request is malformed' }] } })
    t.match(response.headers, SECURITY_HEADERS)
  }
})

/** Sends `request` as raw bytes and resolves with everything the server wrote before closing the connection. */
async function rawExchange (port: number, request: string): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  socket.end(request)
  const chunks: Buffer[] = []
  for await (const chunk of socket) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString()
}

t.test('requests the HTTP parser refuses answer the envelope with the security headers, then the connection closes', async (t) => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const cases = [
    { name: 'headers over the size limit', request: `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, status: 431, error: { code: 'HEADERS_TOO_LARGE', message: 'Request headers too large' } },
    { name: 'a malformed request line', request: 'NOT HTTP AT ALL\r\n\r\n', status: 400, error: { code: 'VALIDATION_FAILED', message: 'Validation failed', details: [{ path: '', message: 'request is malformed' }] } }
  ]
  for (const { name, request, status, error } of cases) {
    const answer = await rawExchange(port, request)
    const [head = '', body] = answer.split('\r\n\r\n')
    const [statusLine, ...fields] = head.split('\r\n')
    const headers = Object.fromEntries(fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()]))
    t.equal(statusLine, `HTTP/1.1 ${status} ${STATUS_CODES[status]}`, name)
    t.same(JSON.parse(body ?? ''), { error }, `${name}: the envelope`)
    t.match(headers, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body ?? '')), connection: 'close' }, `${name}: the security headers`)
  }
})

for (const backend of backends()) {
  t.test(`U+0000 in a string is refused on every database, as PostgreSQL cannot store it (${backend.name})`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const user = await createAccount(app)
    const attempts = [
      { method: 'POST' as const, url: '/api/v1/users', payload: { email: 'nul@example.com', name: 'Nul\u0000Name', password: 'password1' }, path: '/name' },
      { method: 'POST' as const, url: '/api/v1/posts', payload: { title: 'Title', body: '\u0000' }, path: '/body' },
      { method: 'GET' as const, url: '/api/v1/posts?search=a%00b', path: '/search' },
      { method: 'DELETE' as const, url: `/api/v1/users/${user.id}/devices/a%00`, path: '/deviceId' }
    ]
    for (const { path, ...request } of attempts) {
      const response = await app.inject(withToken(user.token, request))
      t.equal(response.statusCode, 400, request.url)
      t.same(response.json().error.details, [{ path, message: 'must not contain U+0000' }])
    }
    const stored = await app.database.db.selectFrom('users').select('id').where('email', '=', 'nul@example.com').execute()
    t.same(stored, [], 'nothing stored')
  })
}
