import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors'
import fp from 'fastify-plugin'

/**
 * Cross-origin access from CORS_ORIGINS only (every origin when unset), through @fastify/cors.
 * Bearer tokens, not cookies: no credentials. An allowed origin is echoed, never `*`; every
 * answer carries `Vary: Origin`, so that a cache never serves one origin's answer to another.
 */
const PREFLIGHT: FastifyCorsOptions = {
  origin: true,
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: ['Authorization', 'Content-Type', 'X-Device-Id'],
  /** Seconds a browser may reuse a preflight's answer. */
  maxAge: 600
}
/** Any other request: the response headers a browser script may read besides the CORS-safelisted ones. */
const ACTUAL: FastifyCorsOptions = {
  origin: true,
  exposedHeaders: ['Location', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
}
/** OPTIONS that is no preflight: an ordinary request, which no route serves (404). */
const NOT_PREFLIGHT: FastifyCorsOptions = { ...ACTUAL, preflight: false }
/**
 * No origin (not cross-origin: servers, curl, load balancers) or a refused one: no CORS header
 * but Vary; a refused origin's preflight is answered as an unknown route (404) and learns
 * nothing of the API.
 */
const DISABLED: FastifyCorsOptions = { origin: false }

/**
 * The options are chosen per request (the plugin's delegator): given one set, the plugin would
 * send the exposed headers on every answer, preflights included, the preflight headers to
 * refused origins, and a 400 to an OPTIONS request that is no preflight. Preflights are
 * answered in its onRequest hook, before rate limits and authentication: browsers send them
 * without the Authorization header.
 */
export default fp(async (fastify) => {
  const origins = fastify.config.corsOrigins === null ? null : new Set(fastify.config.corsOrigins)
  await fastify.register(fastifyCors, {
    delegator: (request, callback) => {
      const { origin } = request.headers
      if (origin === undefined || (origins !== null && !origins.has(origin))) callback(null, DISABLED)
      else if (request.method !== 'OPTIONS') callback(null, ACTUAL)
      else callback(null, request.headers['access-control-request-method'] === undefined ? NOT_PREFLIGHT : PREFLIGHT)
    }
  })
}, { name: 'cors' })
