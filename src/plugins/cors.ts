import cors from '@fastify/cors'
import fp from 'fastify-plugin'

/**
 * Spec 5.8: cross-origin access only from CORS_ORIGINS (every origin when unset, which
 * config refuses in production). Bearer tokens, not cookies: no credentials.
 */
export default fp(async (fastify) => {
  const { corsOrigins } = fastify.config
  await fastify.register(cors, {
    origin: corsOrigins ?? true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Device-Id'],
    exposedHeaders: ['Location', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'],
    maxAge: 600
  })
}, { name: 'cors' })
