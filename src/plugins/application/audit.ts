import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { AuditEvent } from '../../../schemas/audit.js'
import { type AuditFields, type AuditTrail, auditStreamSink } from '../../services/audit/index.js'
import { createAuditTrail } from '../../services/audit-trail.js'

declare module 'fastify' {
  interface FastifyInstance {
    auditTrail: AuditTrail
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

/**
 * The audit trail services write through (docs/api.md, "Audit log"; createAuditTrail), its
 * stream, and the entries of requests. Batched entries are flushed by a job of the background
 * plugin (src/plugins/application/background.ts), which closes the trail before the database.
 */
export default fp(async (fastify) => {
  const { config, repositories } = fastify
  // On stdout, through the log at level info whatever LOG_LEVEL says: the stream was asked for.
  const sink = auditStreamSink(config.auditStream, fastify.log.child({}, { level: 'info' }))
  const trail = createAuditTrail({ config, repositories }, {
    // The services' dispatcher exists by the time any change is made.
    published: () => { fastify.services.webhookDispatcher.kick() },
    ...(sink !== undefined && { sink }),
    failed: (error, pending) => { fastify.log.error({ err: error, pending }, 'audit write failed; entries kept for retry') },
    recovered: () => { fastify.log.info('audit writes recovered') }
  })
  fastify.decorate('auditTrail', trail)
  fastify.decorate('auditSink', { close: async () => { await sink?.close() } })
  fastify.decorateRequest('audit', function (this: FastifyRequest, event: AuditEvent, entry: AuditFields) {
    trail.recordLaterIn(this.serviceContext, event, entry)
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
}, { name: 'audit', dependencies: ['repositories', 'authentication'] })
