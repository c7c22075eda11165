import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Errors } from '../errors.js'
import { SlidingWindowRedisStore } from '../rate-limit/redis-store.js'
import { type RateLimitStore, SlidingWindowMemoryStore, type WindowState } from '../rate-limit/sliding-window.js'
import { addressKey } from '../security/network.js'
import { redactUrl } from '../security/redaction.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** DELETE of a user, role changes, the audit log: the admin rate-limit tier and zero trust. */
    adminOperation?: boolean
    /** `false` for probes that must never be limited (health checks). */
    rateLimit?: false
  }
}

const AUTH_PREFIX = '/api/v1/auth/'

interface Tier { max: number, group: string }

/**
 * Rate limits (docs/api.md, "Rate limits"): three tiers per client address (IPv6 by /64),
 * each a sliding window of RATE_LIMIT_WINDOW_MS: general (RATE_LIMIT_MAX), `/api/v1/auth/*`
 * (RATE_LIMIT_AUTH_MAX) and admin operations (RATE_LIMIT_ADMIN_MAX). The client address is
 * Fastify's `request.ip`, which honours X-Forwarded-For only from TRUST_PROXY's proxies.
 * Counters live in Redis when REDIS_URL is set. If Redis cannot answer, limits fail open
 * (requests pass, a warning is logged): an outage of the cache must not take the API down,
 * and sign-in stays guarded by the account lockout and the hashing cap.
 *
 * One root onRequest hook applies the limits, so it runs on every request (unknown routes
 * included) before any authentication: unauthenticated floods are counted too. Only CORS
 * preflights are answered before it (plugins/cors.ts), as browsers send them unprompted. It
 * is callback-style so that the memory store's answer costs no promise on the request path.
 */
export default fp(async (fastify) => {
  const limits = fastify.config.rateLimit
  const { redis } = fastify
  const store: RateLimitStore = redis === null ? new SlidingWindowMemoryStore() : new SlidingWindowRedisStore(redis)
  const tiers: Record<'general' | 'auth' | 'admin', Tier> = {
    general: { max: limits.max, group: '' },
    auth: { max: limits.authMax, group: ':auth' },
    admin: { max: limits.adminMax, group: ':admin' }
  }

  let unreachable = false
  function failOpen (error: unknown): void {
    if (!unreachable) fastify.log.warn({ err: error }, 'rate-limit store unreachable: limits fail open until it returns')
    unreachable = true
  }

  /** Sends the limit headers; the error to answer with when the request is over the limit. */
  function apply (request: FastifyRequest, reply: FastifyReply, max: number, state: WindowState): Error | undefined {
    const resetSeconds = Math.ceil(state.ttl / 1000)
    reply.header('x-ratelimit-limit', max)
    reply.header('x-ratelimit-remaining', Math.max(0, max - state.current))
    reply.header('x-ratelimit-reset', resetSeconds)
    if (state.current <= max) return undefined
    reply.header('retry-after', resetSeconds)
    // Once per client, tier and window: a flood of refusals must not become a flood of writes.
    if (state.firstRefusal) request.audit('rate_limit.exceeded', { outcome: 'failure', details: { method: request.method, url: redactUrl(request.url), limit: max } })
    return new Errors.RATE_LIMITED()
  }

  fastify.addHook('onRequest', (request, reply, done) => {
    // routeOptions is built anew on each access: read once.
    const { config, url } = request.routeOptions
    if (config.rateLimit === false) {
      done()
      return
    }
    // The route's own path, not the request's: the router decodes %61uth and takes absolute-form
    // targets (http://host/api/v1/auth/…), either of which would otherwise escape the auth tier.
    const path = url ?? request.url
    const tier = config.adminOperation === true ? tiers.admin : path.startsWith(AUTH_PREFIX) ? tiers.auth : tiers.general
    const state = store.hit(`${addressKey(request.ip)}${tier.group}`, limits.windowMs, tier.max)
    if (state instanceof Promise) {
      state.then((shared) => {
        unreachable = false
        done(apply(request, reply, tier.max, shared))
      }, (error: unknown) => {
        failOpen(error)
        // Not counted: the headers show the whole limit left.
        done(apply(request, reply, tier.max, { current: 0, ttl: limits.windowMs, firstRefusal: false }))
      })
    } else {
      done(apply(request, reply, tier.max, state))
    }
  })
}, { name: 'rate-limit', dependencies: ['redis', 'audit'] })
