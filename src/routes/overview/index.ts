import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { OverviewResponseSchema } from '../../../schemas/overview.js'

/** What an operator checks first (docs/api.md, "Overview"). */
const overview: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('', {
    config: { access: { permission: 'view_audit_logs' }, adminOperation: true },
    schema: {
      tags: ['audit'],
      operationId: 'overview.read',
      summary: 'The last day\'s sign-ins and failures, accounts locked; to holders of admin, the webhooks\' health and the outbox\'s backlog',
      response: { 200: described(OverviewResponseSchema, 'The overview'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => ({ data: await fastify.services.overview.read(request.serviceContext) }))
}

export default overview
