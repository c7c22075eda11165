import fp from 'fastify-plugin'
import { CorsPolicy, isPreflight, VARY_ORIGIN } from '../security/cors.js'

/**
 * Cross-origin access (src/security/cors.ts). Own hook rather than @fastify/cors, which
 * copies its options object and re-joins its header lists on every request, Origin or not
 * (about a sixth of a /health request's CPU here). Preflights are answered in the hook, before
 * rate limits and authentication: the browser sends them without the Authorization header.
 * No route serves OPTIONS, so any other OPTIONS request gets the not-found answer.
 */
export default fp(async (fastify) => {
  const policy = new CorsPolicy(fastify.config.corsOrigins)

  fastify.addHook('onRequest', (request, reply, done) => {
    const { origin } = request.headers
    if (origin === undefined) {
      reply.headers(VARY_ORIGIN)
      done()
    } else if (isPreflight(request.method, request.headers['access-control-request-method'])) {
      // Safari waits for a body on a 204 without Content-Length: 0.
      reply.headers(policy.preflightHeaders(origin)).code(204).header('content-length', '0').send()
    } else {
      reply.headers(policy.responseHeaders(origin))
      done()
    }
  })
}, { name: 'cors' })
