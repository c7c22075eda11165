import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'

declare module 'fastify' {
  interface FastifyInstance {
    /** null when REDIS_URL is unset. */
    redis: Redis | null
  }
}

/**
 * Redis, when configured, for state every instance must share. A Redis that is down fails
 * commands at once (no offline queue) instead of hanging requests; the client keeps
 * reconnecting in the background, so the service recovers when Redis returns. ioredis is loaded
 * only when Redis is configured (docs/performance.md, "Start-up").
 */
export default fp(async (fastify) => {
  const url = fastify.config.redisUrl
  if (url === null) {
    fastify.decorate('redis', null)
    return
  }
  const { Redis } = await import('ioredis')
  const redis: Redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000)
  })
  redis.on('error', (error) => fastify.log.warn({ err: error }, 'redis error'))
  // Start-up does not wait for Redis: the readiness probe reports it until it answers.
  redis.connect().catch(() => {})
  fastify.decorate('redis', redis)
  fastify.addHook('onClose', async () => {
    redis.disconnect()
  })
}, { name: 'redis' })
