import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  INVITATION_FIELDS, InvitationCollectionSchema, InvitationCreateSchema, InvitationParamsSchema,
  InvitationResponseSchema
} from '../../../schemas/organizations.js'

/** An organization's pending invitations (docs/api.md, "Organizations"); accepting is /api/v1/invitations/accept. */
const invitations: FastifyPluginAsyncTypebox = async (fastify) => {
  const { invitations: service } = fastify.services

  fastify.post('/:id/invitations', {
    config: { access: { organization: 'id', permission: 'members:invite' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.invitations.create',
      summary: 'Invite an address by e-mail, with a role no higher than the caller\'s own (good for 7 days, once)',
      params: IdParamsSchema,
      body: InvitationCreateSchema,
      response: {
        201: described(InvitationResponseSchema, 'Invited: the invitation (its token is only in the message)'),
        ...errorResponses({ body: true }, 401, 403, 404, 409, 429)
      }
    }
  }, async (request, reply) => {
    const invitation = await service.invite(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).send({ data: invitation })
  })

  fastify.get('/:id/invitations', {
    config: { access: { organization: 'id', permission: 'members:invite' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.invitations.list',
      summary: 'An organization\'s invitations not yet accepted or withdrawn (expired ones included)',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(INVITATION_FIELDS),
      response: { 200: described(InvitationCollectionSchema, 'A page of invitations'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await service.list(request.serviceContext, request.params.id, request.query))

  fastify.delete('/:id/invitations/:invitationId', {
    config: { access: { organization: 'id', permission: 'members:invite' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.invitations.delete',
      summary: 'Withdraw an invitation: its token stops working',
      params: InvitationParamsSchema,
      response: { 204: { type: 'null', description: 'Withdrawn' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.revoke(request.serviceContext, request.params.id, request.params.invitationId)
    return await reply.code(204).send()
  })
}

export default invitations
