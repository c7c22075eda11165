import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuditEvent } from '../../../schemas/audit.js'
import { AuditRetention } from '../../services/audit/retention.js'
import { type AuditFields, AuditTrail } from '../../services/audit/trail.js'

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
    audit: (event: AuditEvent, entry: AuditFields) => void
  }
}

const DAY = 24 * 60 * 60 * 1000

/**
 * The audit table (docs/api.md, "Audit log"): the trail services write through (batched
 * entries flushed on close, before the database closes), and the retention purge. Both run as
 * jobs of the background plugin (src/plugins/application/background.ts), which closes them.
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
  fastify.decorateRequest('audit', function (this: FastifyRequest, event: AuditEvent, entry: AuditFields) {
    const context = this.serviceContext
    trail.record({ actorId: context.caller?.id ?? null, ...entry, event, ip: context.ip, userAgent: context.userAgent })
  })

  const retention = new AuditRetention({ auditLogs: repository, retentionMs: fastify.config.auditRetentionDays * DAY })
  fastify.decorate('auditRetention', retention)
}, { name: 'audit', dependencies: ['repositories', 'authentication'] })
