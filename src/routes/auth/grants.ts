import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuthorizationGrantListResponseSchema, GrantParamsSchema } from '../../../schemas/authorization-grants.js'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'

/** The consents the caller gave applications at the authorization server (docs/api.md, "Authorization server"). */
const grants: FastifyPluginAsyncTypebox = async (fastify) => {
  const { authorizationGrants } = fastify.services

  fastify.get('/grants', {
    config: { access: 'bearer' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.grants.list',
      summary: 'The applications the caller allowed to sign them in, with what they may see',
      response: { 200: described(AuthorizationGrantListResponseSchema, 'The caller\'s consents'), ...errorResponses({}, 401) }
    }
  }, async (request) => ({ data: await authorizationGrants.list(request.serviceContext) }))

  fastify.delete('/grants/:id', {
    config: { access: 'bearer' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.grants.delete',
      summary: 'Revoke a consent: the application\'s tokens stop working and it must ask again',
      params: GrantParamsSchema,
      response: { 204: { type: 'null', description: 'Revoked' }, ...errorResponses({ body: true }, 401, 404) }
    }
  }, async (request, reply) => {
    await authorizationGrants.revoke(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default grants
