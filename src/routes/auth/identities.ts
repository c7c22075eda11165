import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdentityListResponseSchema } from '../../../schemas/auth.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'

/** The caller's linked provider identities (docs/api.md, "Identities"). */
const identities: FastifyPluginAsyncTypebox = async (fastify) => {
  const { federation } = fastify.services

  fastify.get('', {
    config: { access: 'bearer' },
    schema: {
      operationId: 'auth.identities.list',
      tags: ['auth'],
      summary: 'The caller\'s linked provider identities',
      response: { 200: described(IdentityListResponseSchema, 'The caller\'s linked identities, oldest first'), ...errorResponses({}, 401) }
    }
  }, async (request) => ({ data: await federation.identities(request.serviceContext) }))

  fastify.delete('/:id', {
    config: { access: 'bearer' },
    schema: {
      operationId: 'auth.identities.delete',
      tags: ['auth'],
      summary: 'Unlink one of the caller\'s identities (refused when it is the account\'s last way to sign in); a sensitive change: needs a proof',
      params: IdParamsSchema,
      body: ProofBodySchema,
      response: { 204: { type: 'null', description: 'Unlinked' }, ...errorResponses({ body: true }, 401, 403, 404, 409, 423) }
    }
  }, async (request, reply) => {
    await federation.unlink(request.serviceContext, request.params.id, request.body ?? {})
    return await reply.code(204).send()
  })
}

export default identities
