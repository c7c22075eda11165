import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SuspensionCreateSchema, SuspensionResponseSchema } from '../../../schemas/suspension.js'

/** A user's suspension (docs/api.md, "Suspension"). */
const suspension: FastifyPluginAsyncTypebox = async (fastify) => {
  const { suspensions } = fastify.services

  fastify.post('/:id/suspension', {
    config: { access: { permission: 'manage_users' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.suspension.create',
      summary: 'Suspend an account: it cannot sign in, and its sessions end now, until `until` or until lifted',
      params: IdParamsSchema,
      body: SuspensionCreateSchema,
      response: {
        200: described(SuspensionResponseSchema, 'Suspended: the suspension in force'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request) => ({ data: await suspensions.suspend(request.serviceContext, request.params.id, request.body) }))

  fastify.delete('/:id/suspension', {
    config: { access: { permission: 'manage_users' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.suspension.delete',
      summary: 'Lift an account\'s suspension (harmless when there is none)',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Lifted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await suspensions.lift(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default suspension
