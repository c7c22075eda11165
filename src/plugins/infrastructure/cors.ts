import fastifyCors from '@fastify/cors'
import fp from 'fastify-plugin'

/**
 * Cross-origin access from CORS_ORIGINS only (every origin when unset), through @fastify/cors.
 * Bearer tokens, not cookies: no credentials. An allowed origin is echoed, never `*`; a request
 * without Origin (not cross-origin: servers, curl, load balancers) or from a refused origin
 * gets no CORS header but `Vary: Origin`, which every answer carries, so that a cache never
 * serves one origin's answer to another. A refused origin's preflight is answered as an
 * unknown route (404) and learns nothing of the API. Preflights are answered in the plugin's
 * onRequest hook, before rate limits and authentication: browsers send them without the
 * Authorization header.
 */
/** Response headers a browser script may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = 'Location, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset'

export default fp(async (fastify) => {
  const origins = fastify.config.corsOrigins === null ? null : new Set(fastify.config.corsOrigins)
  const allows = (origin: string | undefined) => origin !== undefined && (origins === null || origins.has(origin))

  /**
   * Hand-written, as the plugin cannot express it: it answers 400 to an OPTIONS request from
   * an allowed origin that is no preflight (no Access-Control-Request-Method). No route serves
   * OPTIONS, so this is answered as an unknown route, with the CORS headers of any other
   * request from that origin, here, before the rate limits, like a preflight (browsers never
   * send such a request: a script's OPTIONS request is itself preflighted). The plugin's
   * per-request options (`delegator`), which could say so, cost about a fifth of a /health
   * request's throughput.
   */
  fastify.addHook('onRequest', (request, reply, done) => {
    const { origin } = request.headers
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] === undefined && allows(origin)) {
      void reply.headers({ vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS })
      reply.callNotFound()
    } else {
      done()
    }
  })

  // The plugin adds the exposed headers to a preflight's answer too, where they mean nothing
  // (docs/api.md, "CORS"): its OPTIONS route, which answers preflights, drops them.
  fastify.addHook('onRoute', (route) => {
    if (route.method !== 'OPTIONS' || route.url !== '*') return
    route.onSend = [...[route.onSend ?? []].flat(), async (_request, reply) => { reply.removeHeader('access-control-expose-headers') }]
  })

  await fastify.register(fastifyCors, {
    origin: (origin, callback) => { callback(null, allows(origin)) },
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Device-Id'],
    exposedHeaders: EXPOSED_HEADERS,
    /** Seconds a browser may reuse a preflight's answer. */
    maxAge: 600
  })
}, { name: 'cors' })
