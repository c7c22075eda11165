import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createAccount, withToken } from '../helpers/accounts.js'
import { build, redisReady } from '../helpers/app.js'

const limits = { RATE_LIMIT_MAX: '3', RATE_LIMIT_AUTH_MAX: '2', RATE_LIMIT_ADMIN_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' }
/** A fresh documentation-range address per call, so counters never carry over (Redis included). */
const freshAddress = () => `198.51.${randomInt(0, 256)}.${randomInt(1, 255)}`

function get (app: FastifyInstance, url: string, remoteAddress: string, headers: Record<string, string> = {}) {
  return app.inject({ method: 'GET', url, remoteAddress, headers })
}

t.test('general tier: exactly RATE_LIMIT_MAX per window, then 429 with headers', async (t) => {
  const app = await build(t, { env: limits })
  const address = freshAddress()
  for (let n = 1; n <= 3; n++) {
    const response = await get(app, '/api/v1/users', address)
    t.equal(response.statusCode, 401, `request ${n} passes the limiter`)
    t.equal(response.headers['x-ratelimit-limit'], '3')
    t.equal(response.headers['x-ratelimit-remaining'], String(3 - n))
  }
  const limited = await get(app, '/api/v1/users', address)
  t.equal(limited.statusCode, 429)
  t.same(limited.json(), { error: { code: 'RATE_LIMITED', message: 'Rate limit exceeded' } })
  t.equal(limited.headers['retry-after'], '60')
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  t.equal(limited.headers['x-content-type-options'], 'nosniff', 'a 429 carries the security headers')
  t.equal((await get(app, '/api/v1/users', freshAddress())).statusCode, 401, 'other clients are unaffected')
})

t.test('rate_limit.exceeded is recorded once per client and window, its URL redacted', async (t) => {
  const app = await build(t, { env: limits })
  const address = freshAddress()
  for (let n = 0; n < 3; n++) await get(app, '/api/v1/users?access_token=s3cret-value&page=1', address)
  for (let n = 0; n < 5; n++) t.equal((await get(app, '/api/v1/users?access_token=s3cret-value&page=1', address)).statusCode, 429)
  const other = freshAddress()
  for (let n = 0; n < 4; n++) await get(app, '/api/v1/users', other)
  await app.auditTrail.flush()
  const rows = await app.database.db.selectFrom('audit_logs').select(['details', 'ip']).where('event', '=', 'rate_limit.exceeded').execute()
  t.same(rows.map((row) => row.ip).sort(), [address, other].sort(), 'five refusals of one client, one entry; another client over the limit has its own')
  t.notMatch(JSON.stringify(rows), /s3cret-value/)
  t.match(JSON.stringify(rows), /access_token=\[REDACTED\]&page=1/)
})

t.test('auth tier covers /api/v1/auth/* together, apart from the general tier', async (t) => {
  const app = await build(t, { env: limits })
  const address = freshAddress()
  const login = () => app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: address, payload: { email: 'x@example.com', password: 'nope-nope' } })
  t.equal((await login()).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', remoteAddress: address, payload: { refresh_token: 'x' } })).statusCode, 401)
  const limited = await login()
  t.equal(limited.statusCode, 429, 'the third auth request in the window')
  t.equal(limited.headers['x-ratelimit-limit'], '2')
  t.equal((await get(app, '/api/v1/users', address)).statusCode, 401, 'the general tier still has room')
})

t.test('the auth tier holds however the path is spelled: percent-encoded, or an absolute-form target', async (t) => {
  const app = await build(t, { env: limits })
  for (const url of ['/api/v1/%61uth/login', '/api/v1/auth/%6Cogin', 'http://localhost/api/v1/auth/login']) {
    const address = freshAddress()
    const login = () => app.inject({ method: 'POST', url, remoteAddress: address, payload: { email: 'x@example.com', password: 'nope-nope' } })
    const first = await login()
    t.equal(first.statusCode, 401, `${url}: reaches the sign-in`)
    t.equal(first.headers['x-ratelimit-limit'], '2', `${url}: counted in the auth tier`)
    await login()
    t.equal((await login()).statusCode, 429, `${url}: the third is refused`)
  }
})

t.test('admin tier: RATE_LIMIT_ADMIN_MAX on DELETE user, role changes and the audit log', async (t) => {
  const app = await build(t, { env: { ...limits, RATE_LIMIT_MAX: '100' } })
  const admin = await createAccount(app, { roles: ['super_admin'] })
  const address = freshAddress()
  const call = (method: 'DELETE' | 'PUT' | 'GET', url: string) => app.inject(withToken(admin.token, { method, url, remoteAddress: address }))
  t.equal((await call('GET', '/api/v1/audit-logs')).statusCode, 200)
  t.equal((await call('DELETE', '/api/v1/users/01890000-0000-7000-8000-000000000000')).statusCode, 429)
  t.equal((await call('PUT', `/api/v1/users/${admin.id}/roles/admin`)).statusCode, 429)
  t.equal((await call('GET', `/api/v1/users/${admin.id}`)).statusCode, 200, 'ordinary reads are not admin operations')
})

t.test('unknown routes are limited; health probes are not', async (t) => {
  const app = await build(t, { env: limits })
  const address = freshAddress()
  for (let n = 0; n < 3; n++) t.equal((await get(app, '/nowhere', address)).statusCode, 404)
  const limited = await get(app, '/nowhere', address)
  t.equal(limited.statusCode, 429)
  t.equal(limited.json().error.code, 'RATE_LIMITED')
  for (let n = 0; n < 10; n++) t.equal((await get(app, '/health', address)).statusCode, 200)
  t.equal((await get(app, '/health/ready', address)).statusCode, 200)
})

t.test('a forged X-Forwarded-For does not dodge the limit', async (t) => {
  const app = await build(t, { env: limits })
  const address = freshAddress()
  for (let n = 0; n < 3; n++) await get(app, '/api/v1/users', address, { 'x-forwarded-for': `203.0.113.${n}` })
  t.equal((await get(app, '/api/v1/users', address, { 'x-forwarded-for': '203.0.113.99' })).statusCode, 429)
})

t.test('behind a trusted proxy the forwarded address is the client; others are not believed', async (t) => {
  const app = await build(t, { env: { ...limits, TRUST_PROXY: '10.0.0.1' } })
  for (let n = 0; n < 3; n++) await get(app, '/api/v1/users', '10.0.0.1', { 'x-forwarded-for': '203.0.113.50' })
  t.equal((await get(app, '/api/v1/users', '10.0.0.1', { 'x-forwarded-for': '203.0.113.50' })).statusCode, 429)
  t.equal((await get(app, '/api/v1/users', '10.0.0.1', { 'x-forwarded-for': '203.0.113.51' })).statusCode, 401, 'another client behind the proxy')
  const direct = freshAddress()
  for (let n = 0; n < 3; n++) await get(app, '/api/v1/users', direct, { 'x-forwarded-for': `203.0.113.${100 + n}` })
  t.equal((await get(app, '/api/v1/users', direct, { 'x-forwarded-for': '203.0.113.200' })).statusCode, 429, 'an untrusted sender\'s header is ignored')
})

t.test('IPv6 clients are keyed by /64', async (t) => {
  const app = await build(t, { env: limits })
  const prefix = `2001:db8:${randomInt(0, 65535).toString(16)}:1`
  for (let n = 1; n <= 3; n++) await get(app, '/api/v1/users', `${prefix}::${n}`)
  t.equal((await get(app, '/api/v1/users', `${prefix}::ffff`)).statusCode, 429, 'same /64')
  t.equal((await get(app, '/api/v1/users', `${prefix.slice(0, -1)}2::1`)).statusCode, 401, 'next /64')
})

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('with Redis, instances share the counters', async (t) => {
    const first = await build(t, { env: { ...limits, REDIS_URL: redisUrl } })
    const second = await build(t, { env: { ...limits, REDIS_URL: redisUrl } })
    await redisReady(first, second)
    const address = freshAddress()
    t.equal((await get(first, '/api/v1/users', address)).statusCode, 401)
    t.equal((await get(second, '/api/v1/users', address)).statusCode, 401)
    t.equal((await get(first, '/api/v1/users', address)).statusCode, 401)
    t.equal((await get(second, '/api/v1/users', address)).statusCode, 429, 'the fourth, on either instance')
    t.equal((await get(first, '/api/v1/users', address)).statusCode, 429)
    let recorded = 0
    for (const app of [first, second]) {
      await app.auditTrail.flush()
      recorded += (await app.database.db.selectFrom('audit_logs').select('id').where('event', '=', 'rate_limit.exceeded').execute()).length
    }
    t.equal(recorded, 1, 'the refusals on both instances are recorded once')
  })
}

t.test('an unreachable Redis fails open without hanging', async (t) => {
  const app = await build(t, { env: { ...limits, REDIS_URL: 'redis://127.0.0.1:1' } })
  const address = freshAddress()
  const started = Date.now()
  for (let n = 0; n < 5; n++) t.equal((await get(app, '/api/v1/users', address)).statusCode, 401)
  t.ok(Date.now() - started < 2000, 'no request waited on Redis')
})
