import helmet from '@fastify/helmet'
import fp from 'fastify-plugin'

/**
 * Spec 5.8's response headers, exactly, on every response (errors, 404s, 429s and
 * preflights included: the hook runs first on every request). Helmet's other headers are
 * off so that the set is the spec's; helmet only sends `X-XSS-Protection: 0`, so that one
 * is set here.
 */
export default fp(async (fastify) => {
  await fastify.register(helmet, {
    global: true,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        frameAncestors: ["'none'"],
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'https:']
      }
    },
    strictTransportSecurity: { maxAge: 31_536_000, includeSubDomains: true, preload: false },
    xFrameOptions: { action: 'deny' },
    xContentTypeOptions: true,
    xXssProtection: false,
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: false,
    crossOriginResourcePolicy: false,
    originAgentCluster: false,
    referrerPolicy: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xPoweredBy: true
  })
  fastify.addHook('onRequest', async (_request, reply) => {
    reply.header('x-xss-protection', '1; mode=block')
  })
}, { name: 'security-headers' })
