import { Redis } from 'ioredis'
import t, { type Test } from 'tap'
import { SlidingWindowRedisStore } from '../../src/rate-limit/redis-store.js'
import { type RateLimitStore, SlidingWindowMemoryStore, type WindowState } from '../../src/rate-limit/sliding-window.js'

async function hit (store: RateLimitStore, key: string, windowMs = 1000, max = 3): Promise<WindowState> {
  return await store.hit(key, windowMs, max)
}

/** The same behaviour for every store, under an injected clock. */
async function slidingBehaviour (t: Test, makeStore: (clock: () => number) => RateLimitStore, key: string) {
  let now = 1_000_000
  const store = makeStore(() => now)
  t.same(await hit(store, key), { current: 1, ttl: 1000, firstRefusal: false })
  now += 400
  t.same(await hit(store, key), { current: 2, ttl: 600, firstRefusal: false })
  now += 400
  t.same(await hit(store, key), { current: 3, ttl: 200, firstRefusal: false }, 'the third of three is admitted')
  t.same(await hit(store, key), { current: 4, ttl: 200, firstRefusal: true }, 'the fourth within the window is over, the first refusal')
  now += 199
  t.same(await hit(store, key), { current: 4, ttl: 1, firstRefusal: false }, '1 ms before the first hit slides out: still over, not the first refusal')
  now += 1
  t.same(await hit(store, key), { current: 3, ttl: 400, firstRefusal: false }, 'the first hit slid out: one slot frees, no fixed-window reset')
  t.same(await hit(store, key), { current: 4, ttl: 400, firstRefusal: false }, 'and only one')
  now += 400
  t.equal((await hit(store, key)).current, 3, 'the second slid out')
  now += 399
  t.same(await hit(store, key), { current: 4, ttl: 1, firstRefusal: false }, 'a refusal 999 ms after the reported one is not reported')
  now += 1
  t.equal((await hit(store, key)).current, 3, 'the third slid out')
  t.same(await hit(store, key), { current: 4, ttl: 200, firstRefusal: true }, 'a refusal a whole window after the reported one is')
  now += 5000
  t.same(await hit(store, key), { current: 1, ttl: 1000, firstRefusal: false }, 'a quiet window starts afresh')
  t.equal((await hit(store, `${key}:other`)).current, 1, 'keys are independent')
}

t.test('memory store slides', async (t) => {
  await slidingBehaviour(t, (clock) => new SlidingWindowMemoryStore(clock), 'client')
})

t.test('refused requests are not logged: a flood costs no memory beyond max per key', async (t) => {
  let now = 0
  const store = new SlidingWindowMemoryStore(() => now)
  for (let i = 0; i < 1000; i++) await hit(store, 'flood', 1000, 3)
  now += 1000
  t.equal((await hit(store, 'flood', 1000, 3)).current, 1, 'the flood left nothing behind once its admitted hits slid out')
})

t.test('a key whose last refusal was reported within the window is kept by the sweep', async (t) => {
  let now = 0
  const store = new SlidingWindowMemoryStore(() => now)
  for (let i = 0; i < 3; i++) await hit(store, 'client', 1000, 3)
  now = 999
  t.equal((await hit(store, 'client', 1000, 3)).firstRefusal, true)
  // The admitted hits slid out and a sweep runs (one per window); the reported refusal has not.
  now = 1500
  await hit(store, 'other', 1000, 3)
  for (let i = 0; i < 3; i++) await hit(store, 'client', 1000, 3)
  t.equal((await hit(store, 'client', 1000, 3)).firstRefusal, false, 'still within a window of the reported refusal')
  now = 1999
  t.equal((await hit(store, 'client', 1000, 3)).firstRefusal, true, 'a window after it')
})

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('Redis store slides the same way', async (t) => {
    const redis = new Redis(redisUrl)
    t.teardown(() => redis.disconnect())
    const prefix = `users-api-test:${process.pid}:${Date.now()}:`
    await slidingBehaviour(t, (clock) => new SlidingWindowRedisStore(redis, clock, prefix), 'client')
  })

  t.test('Redis store reports an unreachable server instead of hanging', async (t) => {
    const redis = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null })
    redis.on('error', () => {})
    t.teardown(() => redis.disconnect())
    await t.rejects(hit(new SlidingWindowRedisStore(redis), 'client'))
  })
}
