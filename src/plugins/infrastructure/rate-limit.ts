import fastifyRateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Errors } from '../../errors.js'
import { SlidingWindowRedisStore } from '../../rate-limit/redis-store.js'
import { type RateLimitStore, SlidingWindowMemoryStore, type WindowState } from '../../rate-limit/sliding-window.js'
import { addressKey } from '../../security/network.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** DELETE of a user, role changes, the audit log: the admin rate-limit tier and zero trust. */
    adminOperation?: boolean
    /**
     * In the sign-in tier wherever it is: a form that takes a password, a code or a device's user
     * code (the authorization server's pages).
     */
    signInRate?: boolean
  }
}

const AUTH_PREFIX = '/api/v1/auth/'
/** Reads under /api/v1/auth/ (the caller, sessions, grants) check no credential: the general tier. */
const READS = new Set(['GET', 'HEAD'])

type StoreCallback = Parameters<FastifyRateLimitStore['incr']>[1]

export interface RateLimitOptions {
  /** Told of the first refused request of a client, tier and window, with the tier's limit. */
  onFirstRefusal?: (request: FastifyRequest, limit: number) => void
}

/**
 * The plugin's store interface over the sliding-window counter (the key names client and tier),
 * and `firstRefusal`, which tells once whether a key's refusal is the first of its window: the
 * plugin passes on only a hit's count and ttl. An unreachable counter is reported once
 * (`unreachable`) until it answers again.
 */
function pluginStore (counter: RateLimitStore, unreachable: (error: Error) => void) {
  const toReport = new Set<string>()
  let failing = false
  function answer (key: string, state: WindowState, callback: StoreCallback): void {
    if (state.firstRefusal) toReport.add(key)
    callback(null, state)
  }
  class SlidingWindowStore implements FastifyRateLimitStore {
    incr (key: string, callback: StoreCallback, windowMs: number, max: number): void {
      const state = counter.hit(key, windowMs, max)
      if (!(state instanceof Promise)) {
        answer(key, state, callback)
        return
      }
      state.then((shared) => {
        failing = false
        answer(key, shared, callback)
      }, (error: Error) => {
        if (!failing) unreachable(error)
        failing = true
        callback(error)
      })
    }

    child (): FastifyRateLimitStore {
      return this
    }
  }
  return { SlidingWindowStore, firstRefusal: (key: string) => toReport.delete(key) }
}

/**
 * Three tiers per client address (IPv6 by /64), each a sliding window of RATE_LIMIT_WINDOW_MS:
 * general (RATE_LIMIT_MAX), sign-in (RATE_LIMIT_AUTH_MAX: every request but a read to
 * `/api/v1/auth/*`, and the routes declaring `signInRate`) and admin operations
 * (RATE_LIMIT_ADMIN_MAX), through
 * @fastify/rate-limit with the sliding-window stores. Routes with `config.rateLimit: false`
 * (health probes) are exempt. The client address is Fastify's
 * `request.ip`, which honours X-Forwarded-For only from TRUST_PROXY's proxies. Counters live
 * in Redis when REDIS_URL is set. If Redis cannot answer, limits fail open (requests pass, a
 * warning is logged): an outage of the cache must not take the API down, and sign-in stays
 * guarded by the account lockout and the hashing cap.
 */
export default fp<RateLimitOptions>(async (fastify, { onFirstRefusal = () => {} }) => {
  const limits = fastify.config.rateLimit
  const { redis } = fastify
  const counter: RateLimitStore = redis === null ? new SlidingWindowMemoryStore() : new SlidingWindowRedisStore(redis)
  const { SlidingWindowStore, firstRefusal } = pluginStore(counter, (error) => {
    fastify.log.warn({ err: error }, 'rate-limit store unreachable: limits fail open until it returns')
  })

  await fastify.register(fastifyRateLimit, {
    // Applied by the hook below, not by the plugin's per-route hooks.
    global: false,
    timeWindow: limits.windowMs,
    store: SlidingWindowStore,
    // The store has warned; the request passes uncounted.
    skipOnError: true,
    errorResponseBuilder: () => new Errors.RATE_LIMITED()
  })

  function tier (max: number, group: string) {
    return fastify.rateLimit({
      max,
      keyGenerator: (request) => `${addressKey(request.ip)}${group}`,
      onExceeded: (request, key) => {
        // Once per client, tier and window: a flood of refusals must not become a flood of writes.
        if (firstRefusal(key)) onFirstRefusal(request, max)
      }
    })
  }
  const general = tier(limits.max, '')
  const auth = tier(limits.authMax, ':auth')
  const admin = tier(limits.adminMax, ':admin')

  /**
   * Hand-written, as the plugin cannot express it: its per-route hooks (`global`) would run
   * after a route's own onRequest hooks, so after authentication, and an unauthenticated flood
   * would never be counted; nor do they run for unknown routes. One root onRequest hook runs
   * on every request, unknown routes included, before any authentication; only CORS
   * preflights are answered before it (src/plugins/infrastructure/cors.ts), as browsers send them unprompted.
   * Callback-style, so that an exempt route costs no promise.
   */
  fastify.addHook('onRequest', function rateLimit (request, reply, done) {
    // routeOptions is built anew on each access: read once.
    const { config, url } = request.routeOptions
    if (config.rateLimit === false) {
      done()
      return
    }
    // The route's own path, not the request's: the router decodes %61uth and takes absolute-form
    // targets (http://host/api/v1/auth/…), either of which would otherwise escape the auth tier.
    const path = url ?? request.url
    const signIn = config.signInRate === true || (path.startsWith(AUTH_PREFIX) && !READS.has(request.method))
    const limiter = config.adminOperation === true ? admin : signIn ? auth : general
    limiter.call(this, request, reply).then(() => { done() }, done)
  })
}, { name: 'rate-limit', dependencies: ['redis'] })
