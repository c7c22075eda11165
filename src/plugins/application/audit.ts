import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuditEvent } from '../../../schemas/audit.js'
import { AuditRetention } from '../../services/audit-retention.js'
import { type AuditEntry, AuditTrail } from '../../services/audit-trail.js'
import type { RequestContext } from '../../services/context.js'

declare module 'fastify' {
  interface FastifyInstance {
    auditTrail: AuditTrail
    /** The background purge of entries past AUDIT_RETENTION_DAYS; `purge()` joins the run in progress. */
    auditRetention: AuditRetention
  }
  interface FastifyRequest {
    /**
     * Queues a security event with this request's address, user agent and caller, for the next
     * batch: only for events that may be written late (a rate-limit refusal). Services write
     * theirs before answering (AuditTrail.recordIn).
     */
    audit: (event: AuditEvent, entry: AuditEntry) => void
    /** What a service is told of this request: its address, user agent and caller. */
    readonly serviceContext: RequestContext
  }
}

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

/**
 * The audit table (docs/api.md, "Audit log"): the trail services write through (batched
 * entries flushed on close, before the database closes), and the retention purge, run in the
 * background after start-up and hourly.
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
    writeWith: async (change, rowsOf) => await repository.insertWith(change, rowsOf),
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
    const context = this.serviceContext
    trail.record({ actorId: context.caller?.id ?? null, ...entry, event, ip: context.ip, userAgent: context.userAgent })
  })

  const retention = new AuditRetention({ auditLogs: repository, retentionMs: fastify.config.auditRetentionDays * DAY })
  fastify.decorate('auditRetention', retention)
  const purge = () => {
    retention.purge().then((removed) => {
      if (removed > 0) fastify.log.info({ removed }, 'audit entries past retention purged')
    }, (error: unknown) => { fastify.log.warn({ err: error }, 'audit purge failed; tried again within the hour') })
  }
  // Start-up does not wait for it: a backlog takes as long as it takes, in small batches.
  fastify.addHook('onReady', async () => { purge() })
  const purgeTimer = setInterval(purge, HOUR).unref()

  fastify.addHook('onClose', async () => {
    clearInterval(purgeTimer)
    await retention.stop()
    await trail.close()
  })
}, { name: 'audit', dependencies: ['repositories', 'authentication'] })
