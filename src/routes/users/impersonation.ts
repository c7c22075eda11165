import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ImpersonationCreateSchema, ImpersonationGrantResponseSchema } from '../../../schemas/impersonation.js'

/** Acting as a user (docs/api.md, "Impersonation"). */
const impersonation: FastifyPluginAsyncTypebox = async (fastify) => {
  const { impersonations } = fastify.services

  fastify.post('/:id/impersonation', {
    config: { access: { permission: 'impersonate_users' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.impersonation.create',
      summary: 'Act as a user of a lower rank for 15 minutes, with a reason: an access token of theirs naming you as its actor (`act`)',
      params: IdParamsSchema,
      body: ImpersonationCreateSchema,
      response: {
        201: described(ImpersonationGrantResponseSchema, 'The impersonation and its access token'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const grant = await impersonations.start(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).send({ data: grant })
  })
}

export default impersonation
