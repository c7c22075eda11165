import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AUDIT_FIELDS, AuditCollectionSchema, AuditFiltersSchema } from '../../../schemas/audit.js'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { errorResponses } from '../../../schemas/errors.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { parseCollectionQuery } from '../../collection/query.js'
import { BEARER } from '../../../schemas/common.js'

/** CONTRACT section 6: the audit log, newest first by default. */
const auditLogs: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    onRequest: [fastify.authenticate, fastify.requirePermission('view_audit_logs')],
    config: { adminOperation: true },
    schema: {
      tags: ['audit'],
      summary: 'Security events (filters: event, actor_id, createdAfter)',
      security: BEARER,
      querystring: CollectionQuerySchema(AUDIT_FIELDS, AuditFiltersSchema),
      response: { 200: AuditCollectionSchema, ...errorResponses({}, 401, 403) }
    }
  }, async (request) => {
    const { event, actor_id: actorId, ...query } = request.query
    const filters = {
      ...(event !== undefined && { event }),
      ...(actorId !== undefined && { actor_id: actorId })
    }
    const collection = parseCollectionQuery(query, { ...AUDIT_FIELDS, defaultSort: [{ field: 'created_at', descending: true }] }, fastify.cursors, filters)
    return collectionEnvelope(await fastify.repositories.auditLogs.list(collection), collection.fields)
  })
}

export default auditLogs
