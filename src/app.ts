import type { FastifyPluginAsync } from 'fastify'
import type { Config } from './config.js'
import adminBootstrap from './plugins/admin-bootstrap.js'
import authentication from './plugins/authentication.js'
import database from './plugins/database.js'
import errorHandler from './plugins/error-handler.js'
import redis from './plugins/redis.js'
import repositories from './plugins/repositories.js'
import revocation from './plugins/revocation.js'
import security from './plugins/security.js'
import sessions from './plugins/sessions.js'
import authRoutes from './routes/auth/index.js'
import healthRoutes from './routes/health/index.js'
import usersRoutes from './routes/users/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export interface AppOptions {
  config: Config
}

/** The application: infrastructure, then decorators, then routes (no listen). */
const app: FastifyPluginAsync<AppOptions> = async (fastify, { config }) => {
  fastify.decorate('config', config)
  for (const warning of config.warnings) fastify.log.warn(warning)
  // Bodies are JSON or refused with 415 (CONTRACT section 2).
  fastify.removeContentTypeParser('text/plain')

  await fastify.register(errorHandler)
  await fastify.register(database)
  await fastify.register(redis)
  await fastify.register(security)
  await fastify.register(repositories)
  await fastify.register(revocation)
  await fastify.register(sessions)
  await fastify.register(authentication)
  await fastify.register(adminBootstrap)

  await fastify.register(healthRoutes, { prefix: '/health' })
  await fastify.register(usersRoutes, { prefix: '/api/v1/users' })
  await fastify.register(authRoutes, { prefix: '/api/v1/auth' })
}

export default app
