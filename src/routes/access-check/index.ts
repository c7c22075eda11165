import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../schemas/errors.js'
import { AccessCheckBodySchema, AccessDecisionResponseSchema } from '../../../schemas/zero-trust.js'
import { described } from '../../../schemas/common.js'

/** The zero-trust access check (docs/api.md, "Zero-trust access check"). */
const accessCheck: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/access-check', {
    config: { access: { permission: 'read' } },
    schema: {
      tags: ['security'],
      operationId: 'security.accessCheck',
      summary: 'Evaluate the risk of an access request (another user\'s needs manage_users)',
      body: AccessCheckBodySchema,
      response: { 200: described(AccessDecisionResponseSchema, 'The decision, its risk score and factors'), ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request) => ({ data: await fastify.services.access.check(request.serviceContext, request.body) }))
}

export default accessCheck
