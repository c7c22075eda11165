import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuditEvent } from '../../../schemas/audit.js'
import { auditStorage } from '../../services/audit/storage.js'
import { auditStreamSink } from '../../services/audit/stream.js'
import { type AuditFields, AuditTrail } from '../../services/audit/trail.js'
import { Retention } from '../../services/retention.js'
import { WebhookPublisher } from '../../services/webhooks/publisher.js'

declare module 'fastify' {
  interface FastifyInstance {
    auditTrail: AuditTrail
    /** The background purge of entries past AUDIT_RETENTION_DAYS; `purge()` joins the run in progress. */
    auditRetention: Retention
    /** Where every audit entry is also written (AUDIT_STREAM=stdout or file), closed after the trail's last flush. */
    auditSink: { close: () => Promise<void> }
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
  const { config } = fastify
  // On stdout, through the log at level info whatever LOG_LEVEL says: the stream was asked for.
  const sink = auditStreamSink(config.auditStream, fastify.log.child({}, { level: 'info' }))
  // Entries and the webhook deliveries they bring about are stored together; the deliveries are
  // sent at once by the services' dispatcher, which exists by the time any change is made.
  const storage = auditStorage({
    auditLogs: repository,
    publisher: new WebhookPublisher({ webhooks: fastify.repositories.webhooks, streamAudit: config.auditStream.kind === 'webhooks' }),
    published: () => { fastify.services.webhookDispatcher.kick() },
    sink
  })
  const trail = new AuditTrail({
    write: async (rows) => {
      await storage.write(rows)
      if (failing) fastify.log.info('audit writes recovered')
      failing = false
    },
    writeWith: storage.writeWith,
    storedAlone: storage.storedAlone,
    onError: (error, pending) => {
      if (!failing) fastify.log.error({ err: error, pending }, 'audit write failed; entries kept for retry')
      failing = true
    }
  })
  fastify.decorate('auditTrail', trail)
  fastify.decorate('auditSink', { close: async () => { await sink?.close() } })
  fastify.decorateRequest('audit', function (this: FastifyRequest, event: AuditEvent, entry: AuditFields) {
    const context = this.serviceContext
    trail.record({ actorId: context.caller?.id ?? null, ...entry, event, ip: context.ip, userAgent: context.userAgent })
  })

  // Every request made in an impersonation is audited with both ids (docs/api.md, "Impersonation").
  fastify.addHook('onResponse', (request, reply, done) => {
    const caller = request.user
    if (caller !== null && caller.impersonatorId !== null) {
      request.audit('impersonation.request', {
        outcome: reply.statusCode < 400 ? 'success' : 'failure',
        actorId: caller.impersonatorId,
        targetId: caller.id,
        details: { method: request.method, route: request.routeOptions.url ?? request.url, status: reply.statusCode }
      })
    }
    done()
  })

  const retention = new Retention({
    purgeBatch: async (before, limit) => await repository.purgeBatch(before, limit),
    retentionMs: config.auditRetentionDays * DAY
  })
  fastify.decorate('auditRetention', retention)
}, { name: 'audit', dependencies: ['repositories', 'authentication'] })
