import { Redis } from 'ioredis'
import t from 'tap'
import { claimsOf, uniqueEmail } from '../helpers/accounts.js'
import { type ServiceProcess, startService } from '../helpers/process.js'
import { startPostgres, startRedis } from './instances.js'
import { byStatus, type Exchange, json, Load, readinessAnswer, registrations, send, signUp, waitFor } from './load.js'

/** Redis calls never wait (no offline queue, 1 s command timeout): nothing may take longer than this. */
const ANSWER_WITHIN_MS = 2000
const RECOVERY_WITHIN_MS = 10_000
/** A revoked token is refused by every instance within this (docs/api.md, "Token revocation"). */
const REVOKED_EVERYWHERE_WITHIN_MS = 1000
const GENERAL_LIMIT = 1_000_000
const CHANNEL = 'users-api:revocations'

/**
 * Signs a new account in on `from`, logs it out there, and resolves with how long after the
 * logout's answer `to` first refuses the token.
 */
async function revocationDelay (from: ServiceProcess, to: ServiceProcess): Promise<{ jti: string, ms: number }> {
  const { token } = await signUp(from.base, uniqueEmail('revoked'))
  const me = () => send(`${to.base}/api/v1/auth/me`, json('GET', undefined, token))
  if ((await me()).status !== 200) throw new Error('the token does not work on the other instance')
  const logout = await send(`${from.base}/api/v1/auth/logout`, json('POST', undefined, token))
  if (logout.status !== 204) throw new Error(`logout: ${logout.status ?? logout.failure}`)
  const refused = await waitFor('the other instance refuses the revoked token', 5000, async () => {
    const answer = await me()
    return answer.status === 401 ? answer : undefined
  })
  return { jti: String(claimsOf(token).jti), ms: refused.answeredAt - logout.answeredAt }
}

t.test('Redis killed and restarted under load: limits fail open, revocations still propagate, then Redis is used again', async (t) => {
  const postgres = await startPostgres(t)
  const redis = await startRedis(t)
  const env = { DATABASE_URL: postgres.url, REDIS_URL: redis.url, RATE_LIMIT_MAX: String(GENERAL_LIMIT), RATE_LIMIT_AUTH_MAX: '1000000' }
  // One after the other: both would migrate the same empty database.
  const first = await startService(t, env)
  const second = await startService(t, env)
  const reader = await signUp(first.base, uniqueEmail('reader'))
  // The load registers on the second instance: its first registration (hashing workers started,
  // connections opened) is not what this test measures, and on a busy machine it can take longer
  // than the answer bound.
  await signUp(second.base, uniqueEmail('warm-up'))

  const read = (service: ServiceProcess) => () => ({ url: `${service.base}/api/v1/users/${reader.id}`, init: json('GET', undefined, reader.token) })
  const load = new Load([
    { name: 'read first', workers: 2, request: read(first) },
    { name: 'read second', workers: 2, request: read(second) },
    registrations(second.base, 2)
  ], { answerWithinMs: ANSWER_WITHIN_MS, paceMs: 20 })
  t.teardown(async () => await load.stop())
  const remaining = (e: Exchange) => Number(e.headers?.get('x-ratelimit-remaining'))
  const counted = (e: Exchange) => e.stream.startsWith('read') && remaining(e) < GENERAL_LIMIT

  const healthyAt = Date.now()
  await load.until('reads counted against the limit in Redis, registrations succeed', 30_000, (all) => {
    const since = all.filter((e) => e.sentAt >= healthyAt)
    return since.filter(counted).length >= 20 && since.some((e) => e.stream === 'register' && e.status === 201)
  })

  await redis.stop()
  const downAt = Date.now()
  for (const service of [first, second]) {
    const readiness = await readinessAnswer(service.base, 503, 5000)
    t.same(readiness.body, { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: redis unreachable' } }, '/health/ready: 503 naming Redis')
    const liveness = await send(`${service.base}/health`)
    t.same([liveness.status, liveness.body], [200, { status: 'ok' }], '/health: the process is alive')
  }
  const polled = await revocationDelay(first, second)
  t.ok(polled.ms <= REVOKED_EVERYWHERE_WITHIN_MS, `without Redis, a logout on one instance reaches the other by the database poll (${polled.ms} ms)`)
  // Down at least until requests sent a whole answer bound after the kill are answered: a
  // client that queued commands until Redis returned would have hung them past the bound.
  await load.until('registrations and reads answered during the outage', 15_000, (all) => {
    const during = all.filter((e) => e.sentAt >= downAt)
    return during.filter((e) => e.stream === 'register').length >= 5 && during.filter((e) => e.stream.startsWith('read')).length >= 50 &&
      during.some((e) => e.sentAt >= downAt + ANSWER_WITHIN_MS)
  })

  const restartAt = Date.now()
  await redis.start()
  const upAt = Date.now()
  const outage = load.between(downAt, restartAt)
  t.same(outage.filter((e) => !(e.status === 200 || e.status === 201)).map((e) => `${e.stream} ${e.status ?? e.failure}`), [], 'during the outage every request succeeds: limits fail open')
  t.same(outage.filter(counted).map((e) => remaining(e)), [], 'and is not counted (X-RateLimit-Remaining stays at the limit)')
  const slowest = Math.max(...outage.map((e) => e.answeredAt - e.sentAt))

  const probe = new Redis(redis.url)
  t.teardown(() => probe.disconnect())
  await load.until('reads counted in Redis again', RECOVERY_WITHIN_MS, (all) => all.some((e) => e.sentAt >= upAt && counted(e)))
  const countingAgain = (load.between(upAt).find(counted)?.answeredAt ?? Infinity) - upAt
  t.ok(await probe.exists('users-api:rate:{127.0.0.1}'), 'the restarted Redis holds the rate-limit counters')
  const resubscribed = await waitFor('both instances subscribe again', RECOVERY_WITHIN_MS, async () => {
    const [, subscribers] = await probe.pubsub('NUMSUB', CHANNEL) as [string, number]
    return subscribers === 2 ? Date.now() - upAt : undefined
  })
  for (const service of [first, second]) {
    const ready = await readinessAnswer(service.base, 200, RECOVERY_WITHIN_MS)
    t.same(ready.body.checks, { database: 'ok', redis: 'ok' }, '/health/ready: Redis is back')
  }

  const listener = probe.duplicate()
  t.teardown(() => listener.disconnect())
  await listener.subscribe(CHANNEL)
  const published: string[] = []
  listener.on('message', (_channel: string, message: string) => published.push(JSON.parse(message).jti))
  const pushed = await revocationDelay(first, second)
  await waitFor('the revocation is published', 5000, async () => published.includes(pushed.jti) ? true : undefined)
  t.pass('a logout is published over Redis again')
  t.ok(pushed.ms <= REVOKED_EVERYWHERE_WITHIN_MS, `and the other instance refuses the token (${pushed.ms} ms)`)

  await load.stop()
  const all = load.exchanges
  const sent = (e: Exchange) => `sent ${e.sentAt - downAt} ms after the kill`
  t.same(all.filter((e) => e.status === null).map((e) => `${e.stream} ${e.failure}, ${sent(e)}`), [], `no request hung (${ANSWER_WITHIN_MS} ms) or lost its connection`)
  t.same(all.filter((e) => !(e.status === 200 || e.status === 201)).map((e) => `${e.stream} ${e.status}: ${JSON.stringify(e.body)}, ${sent(e)}`), [], 'no request failed at all: never a 500 or a 503')
  t.same([first.child.exitCode, second.child.exitCode], [null, null], 'both instances stayed up')

  t.comment(`fault: redis-server killed (SIGKILL), down ${restartAt - downAt} ms, restarted empty`)
  t.comment(`requests during the outage: ${JSON.stringify(byStatus(outage))} (reads on both instances, registrations); slowest answer ${slowest} ms`)
  t.comment(`revocation across instances: ${polled.ms} ms by the database poll while Redis was down, ${pushed.ms} ms once Redis was back`)
  t.comment(`recovery after Redis accepted connections again: limits counted in Redis after ${countingAgain} ms, both instances subscribed after ${resubscribed} ms`)
  t.comment(`requests: ${all.length} in all, ${JSON.stringify(byStatus(all))}`)
})
