import rateLimit from '@fastify/rate-limit'
import fp from 'fastify-plugin'
import { Errors } from '../errors.js'
import { SlidingWindowRedisStore } from '../rate-limit/redis-store.js'
import { SlidingWindowMemoryStore } from '../rate-limit/sliding-window.js'
import { addressKey } from '../security/network.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** DELETE of a user, role changes, the audit log: the admin rate-limit tier and zero trust. */
    adminOperation?: boolean
  }
}

const AUTH_PREFIX = '/api/v1/auth/'

/**
 * Spec section 8 / CONTRACT section 1: three tiers per client address (IPv6 by /64), each a
 * sliding window of RATE_LIMIT_WINDOW_MS: general (RATE_LIMIT_MAX), `/api/v1/auth/*`
 * (RATE_LIMIT_AUTH_MAX) and admin operations (RATE_LIMIT_ADMIN_MAX). The client address is
 * Fastify's `request.ip`, which honours X-Forwarded-For only from TRUST_PROXY's proxies.
 * Counters live in Redis when REDIS_URL is set. If Redis cannot answer, limits fail open
 * (requests pass, a warning is logged): an outage of the cache must not take the API down,
 * and sign-in stays guarded by the account lockout and the hashing cap.
 */
export default fp(async (fastify) => {
  const limits = fastify.config.rateLimit
  const { redis } = fastify

  let warned = false
  const store = redis === null
    ? new SlidingWindowMemoryStore()
    : new SlidingWindowRedisStore(redis, (error) => {
      if (!warned) fastify.log.warn({ err: error }, 'rate-limit store unreachable: limits fail open until it returns')
      warned = true
    })

  // The plugin's own per-route hooks would run after the routes' authentication hooks, so
  // unauthenticated floods would pass uncounted; its limiters are applied from one root
  // hook instead, which runs first on every request, unknown routes included.
  await fastify.register(rateLimit, {
    global: false,
    max: limits.max,
    timeWindow: limits.windowMs,
    // The plugin constructs the store with `new`; a constructor returning an object yields it.
    store: function Store () { return store } as unknown as never,
    skipOnError: true
  })
  const tier = (max: number, group: string) =>
    fastify.createRateLimit({ max, keyGenerator: (request) => `${addressKey(request.ip)}${group}` })
  const tiers = { general: tier(limits.max, ''), auth: tier(limits.authMax, ':auth'), admin: tier(limits.adminMax, ':admin') }

  fastify.addHook('onRequest', async (request, reply) => {
    const { config } = request.routeOptions
    if (config.rateLimit === false) return
    const limiter = config.adminOperation === true ? tiers.admin : request.url.startsWith(AUTH_PREFIX) ? tiers.auth : tiers.general
    const result = await limiter(request)
    if (result.isAllowed) return
    reply.header('x-ratelimit-limit', result.max)
    reply.header('x-ratelimit-remaining', result.remaining)
    reply.header('x-ratelimit-reset', result.ttlInSeconds)
    if (!result.isExceeded) return
    reply.header('retry-after', result.ttlInSeconds)
    request.audit('rate_limit.exceeded', { outcome: 'failure', details: { method: request.method, url: request.url, limit: result.max } })
    throw new Errors.RATE_LIMITED()
  })
}, { name: 'rate-limit', dependencies: ['redis', 'audit'] })
