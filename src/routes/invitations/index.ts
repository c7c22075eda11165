import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { InvitationAcceptSchema, OrganizationResponseSchema } from '../../../schemas/organizations.js'

/** Accepting an invitation to an organization (docs/api.md, "Organizations"). */
const invitations: FastifyPluginAsyncTypebox = async (fastify) => {
  const { invitations: service } = fastify.services

  fastify.post('/accept', {
    config: { access: 'bearer' },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.invitations.accept',
      summary: 'Accept an invitation with the token of its message: the caller\'s verified address must be the invited one',
      body: InvitationAcceptSchema,
      response: {
        200: described(OrganizationResponseSchema, 'Joined: the organization, with the caller\'s role'),
        ...errorResponses({ body: true }, 401, 403, 409)
      }
    }
  }, async (request) => ({ data: await service.accept(request.serviceContext, request.body.token) }))
}

export default invitations
