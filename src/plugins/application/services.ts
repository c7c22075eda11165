import fp from 'fastify-plugin'
import { createDelivery } from '../../services/messaging/transports/index.js'
import { createServices, type Services } from '../../services/index.js'
import { singleUseStores } from '../../store/single-use.js'
import type { TxtResolver } from '../../services/organizations/txt-records.js'
import type { Resolver } from '../../security/outbound-http.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The flows route handlers call (src/services/). */
    services: Services
  }
}

/**
 * The service layer, wired to this app's repositories, token and password services, audit
 * trail and revocation list. OAuth state and passkey challenges live in Redis when configured
 * (else in the database), so any instance can finish a flow another began.
 */
export default fp<{ resolve?: Resolver, resolveTxt?: TxtResolver }>(async (fastify, { resolve, resolveTxt }) => {
  const { redis, repositories, config, database } = fastify
  const log = {
    info: (entry: Record<string, unknown>, message: string) => { fastify.log.info(entry, message) },
    warn: (entry: Record<string, unknown>, message: string) => { fastify.log.warn(entry, message) },
    error: (entry: Record<string, unknown>, message: string) => { fastify.log.error(entry, message) }
  }
  const services = createServices({
    config,
    repositories,
    cursors: fastify.cursors,
    passwords: fastify.passwords,
    tokens: fastify.tokens,
    audit: fastify.auditTrail,
    revokeAccessToken: fastify.revocations.revoke,
    singleUse: singleUseStores(database.db, redis),
    ...createDelivery(config.messages, log),
    log,
    resolve,
    resolveTxt
  })
  fastify.decorate('services', services)
  // Outbox rounds, OAuth discovery and the refresh-retry erase are background jobs
  // (src/plugins/application/background.ts), which also stops the outbox at close.
}, { name: 'services', dependencies: ['database', 'redis', 'credentials', 'repositories', 'audit', 'revocation'] })
