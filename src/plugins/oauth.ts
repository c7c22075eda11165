import fp from 'fastify-plugin'
import { OAuthService } from '../oauth/oauth-service.js'
import { DatabaseOAuthStateStore, RedisOAuthStateStore } from '../oauth/state-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    oauth: OAuthService
  }
}

/** OAuth sign-in; its state lives in Redis when configured, so any instance can finish a flow. */
export default fp(async (fastify) => {
  const { redis, repositories, config, database } = fastify
  fastify.decorate('oauth', new OAuthService({
    providers: config.oauth,
    states: redis === null ? new DatabaseOAuthStateStore(database.db) : new RedisOAuthStateStore(redis),
    users: repositories.users,
    identities: repositories.identities
  }))
}, { name: 'oauth', dependencies: ['repositories', 'redis'] })
