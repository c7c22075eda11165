import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AUDIT_FIELDS, AuditCollectionSchema, AuditFiltersSchema } from '../../../schemas/audit.js'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { errorResponses } from '../../../schemas/errors.js'
import { described } from '../../../schemas/common.js'

/** The audit log, newest first by default (docs/api.md, "Audit log"). */
const auditLogs: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    config: { access: { permission: 'view_audit_logs' }, adminOperation: true },
    schema: {
      tags: ['audit'],
      operationId: 'auditLogs.list',
      summary: 'Security events (filters: event, actor_id, createdAfter)',
      querystring: CollectionQuerySchema(AUDIT_FIELDS, AuditFiltersSchema),
      response: { 200: described(AuditCollectionSchema, 'A page of audit entries'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => await fastify.services.auditLog.list(request.query))
}

export default auditLogs
