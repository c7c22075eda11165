import fp from 'fastify-plugin'
import { createDelivery } from '../../delivery/index.js'
import { createServices, type Services } from '../../services/index.js'
import { singleUseStores } from '../../store/single-use.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The flows route handlers call (src/services/). */
    services: Services
  }
}

/** Every instance delivers what is due this often (and at once after storing a message). */
const OUTBOX_POLL_MS = 2000

/**
 * The service layer, wired to this app's repositories, token and password services, audit
 * trail and revocation list. OAuth state and passkey challenges live in Redis when configured
 * (else in the database), so any instance can finish a flow another began.
 */
export default fp(async (fastify) => {
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
    log
  })
  fastify.decorate('services', services)
  services.outbox.start(OUTBOX_POLL_MS)
  // Start-up goes on without a provider whose discovery document cannot be read: its routes
  // answer 502 until a later read succeeds (docs/operations.md, "Providers by issuer").
  const discovering = services.oauth.discoverAll().then((failures) => {
    for (const { provider, reason } of failures) fastify.log.warn({ provider, reason }, 'OAuth provider unavailable: its discovery document could not be read')
  })
  // A pair kept for refresh retries is erased within one more window once its own has passed.
  const retryWindowMs = config.session.refreshRetryWindowS * 1000
  let erasing: Promise<void> = Promise.resolve()
  const eraseTimer = retryWindowMs === 0
    ? null
    : setInterval(() => {
      erasing = services.sessions.eraseLapsedRetries().catch((error: unknown) => { fastify.log.warn({ err: error }, 'erasing refresh retries failed') })
    }, retryWindowMs).unref()
  // Delivery under way finishes before the database closes; what is not delivered yet stays
  // in the outbox for the next instance to start.
  fastify.addHook('onClose', async () => {
    if (eraseTimer !== null) clearInterval(eraseTimer)
    await discovering
    await erasing
    await services.outbox.stop()
  })
}, { name: 'services', dependencies: ['database', 'redis', 'security', 'repositories', 'audit', 'revocation'] })
