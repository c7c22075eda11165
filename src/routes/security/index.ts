import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses } from '../../../schemas/errors.js'
import { AccessCheckBodySchema, AccessDecisionResponseSchema } from '../../../schemas/security.js'
import { BEARER } from '../../../schemas/common.js'

/** Spec 2.11 / 5.10: the zero-trust access check. */
const security: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.post('/access-check', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['security'],
      summary: 'Evaluate the risk of an access request (another user\'s needs manage_users)',
      security: BEARER,
      body: AccessCheckBodySchema,
      response: { 200: AccessDecisionResponseSchema, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request) => {
    const input = request.body
    // A user's devices and recent security events are theirs to probe, or a manager's.
    if (input.user_id !== undefined && input.user_id !== request.user?.id) fastify.authorize(request, 'manage_users')
    else fastify.authorize(request, 'read')
    const decision = await fastify.evaluateAccess(input)
    request.audit('access.evaluated', {
      outcome: decision.allowed ? 'success' : 'failure',
      targetId: input.user_id ?? null,
      details: { source: 'access-check', ...decision }
    })
    return { data: decision }
  })
}

export default security
