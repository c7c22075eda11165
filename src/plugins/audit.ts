import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuditEvent } from '../../schemas/audit.js'
import { type AuditEntry, AuditTrail } from '../services/audit-trail.js'
import type { RequestContext } from '../services/context.js'

declare module 'fastify' {
  interface FastifyInstance {
    auditTrail: AuditTrail
  }
  interface FastifyRequest {
    /** Records a security event with this request's address, user agent and caller. */
    audit: (event: AuditEvent, entry: AuditEntry) => void
    /** What a service is told of this request: its address, user agent and caller. */
    readonly serviceContext: RequestContext
  }
}

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

/**
 * The audit table (docs/api.md, "Audit log"): events are redacted, queued and written in
 * batches, flushed on close before the database is; entries past AUDIT_RETENTION_DAYS are
 * purged at start-up and hourly.
 */
export default fp(async (fastify) => {
  const repository = fastify.repositories.auditLogs
  let failing = false
  const trail = new AuditTrail({
    write: async (rows) => {
      await repository.insertMany(rows)
      if (failing) fastify.log.info('audit writes recovered')
      failing = false
    },
    onError: (error, pending) => {
      if (!failing) fastify.log.error({ err: error, pending }, 'audit write failed; entries kept for retry')
      failing = true
    }
  })
  fastify.decorate('auditTrail', trail)
  fastify.decorateRequest('serviceContext', {
    getter (this: FastifyRequest): RequestContext {
      return { ip: this.ip, userAgent: this.headers['user-agent'] ?? null, caller: this.user ?? null }
    }
  })
  fastify.decorateRequest('audit', function (this: FastifyRequest, event: AuditEvent, entry: AuditEntry) {
    trail.recordIn(this.serviceContext, event, entry)
  })

  const retentionMs = fastify.config.auditRetentionDays * DAY
  const purge = async () => {
    const removed = await repository.purgeBefore(new Date(Date.now() - retentionMs).toISOString())
    if (removed > 0) fastify.log.info({ removed }, 'audit entries past retention purged')
  }
  await purge()
  const purgeTimer = setInterval(() => { purge().catch((error: unknown) => fastify.log.warn({ err: error }, 'audit purge failed')) }, HOUR).unref()

  fastify.addHook('onClose', async () => {
    clearInterval(purgeTimer)
    await trail.close()
  })
}, { name: 'audit', dependencies: ['repositories'] })
