import fp from 'fastify-plugin'
import { DatabaseOAuthStateStore, RedisOAuthStateStore } from '../oauth/state-store.js'
import { createServices, type Services } from '../services/index.js'
import { LoggingMessageSender } from '../services/message-sender.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The flows route handlers call (src/services/). */
    services: Services
  }
}

/**
 * The service layer, wired to this app's repositories, token and password services, audit
 * trail and revocation list. OAuth state lives in Redis when configured, so any instance can
 * finish a flow another began.
 */
export default fp(async (fastify) => {
  const { redis, repositories, config, database } = fastify
  fastify.decorate('services', createServices({
    config,
    repositories,
    cursors: fastify.cursors,
    passwords: fastify.passwords,
    tokens: fastify.tokens,
    audit: fastify.auditTrail,
    revokeAccessToken: fastify.revocations.revoke,
    oauthStates: redis === null ? new DatabaseOAuthStateStore(database.db) : new RedisOAuthStateStore(redis),
    messages: new LoggingMessageSender((entry, message) => { fastify.log.info(entry, message) }),
    warn: (entry, message) => { fastify.log.warn(entry, message) }
  }))
}, { name: 'services', dependencies: ['database', 'redis', 'security', 'repositories', 'audit', 'revocation'] })
