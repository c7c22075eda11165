import t from 'tap'
import { build } from '../../helpers/app.js'

t.test('GET /health is exactly { status: "ok" }', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'GET', url: '/health' })
  t.equal(response.statusCode, 200)
  t.equal(response.body, '{"status":"ok"}')
})

t.test('GET /health/ready reports the database, and Redis as not configured', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(response.statusCode, 200)
  t.same(response.json(), { status: 'ok', checks: { database: 'ok', redis: 'not_configured' } })
})

t.test('GET /health/ready is 503 naming what failed', async (t) => {
  const app = await build(t, { env: { REDIS_URL: 'redis://127.0.0.1:1' } })
  const started = Date.now()
  const response = await app.inject({ method: 'GET', url: '/health/ready' })
  t.ok(Date.now() - started < 3000, 'an unreachable Redis does not hang the probe')
  t.equal(response.statusCode, 503)
  t.same(response.json(), { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: redis unreachable' } })

  await app.database.close()
  const down = await app.inject({ method: 'GET', url: '/health/ready' })
  t.equal(down.statusCode, 503)
  t.equal(down.json().error.message, 'Service unavailable: database and redis unreachable')
})

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('GET /health/ready with a live Redis', async (t) => {
    const app = await build(t, { env: { REDIS_URL: redisUrl } })
    const redis = app.redis
    if (redis === null) throw new Error('redis not configured')
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
    const response = await app.inject({ method: 'GET', url: '/health/ready' })
    t.equal(response.statusCode, 200)
    t.same(response.json(), { status: 'ok', checks: { database: 'ok', redis: 'ok' } })
  })
}
