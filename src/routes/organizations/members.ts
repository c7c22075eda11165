import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { MEMBER_FIELDS, MemberCollectionSchema, MemberParamsSchema, MemberResponseSchema, MemberUpdateSchema } from '../../../schemas/organizations.js'

/** An organization's members (docs/api.md, "Organizations"). */
const members: FastifyPluginAsyncTypebox = async (fastify) => {
  const { organizations } = fastify.services

  fastify.get('/:id/members', {
    config: { access: { organization: 'id', permission: 'members:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.members.list',
      summary: 'An organization\'s members, in joining order by default',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(MEMBER_FIELDS),
      response: { 200: described(MemberCollectionSchema, 'A page of members'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await organizations.listMembers(request.serviceContext, request.params.id, request.query))

  fastify.patch('/:id/members/:userId', {
    config: { access: { organization: 'id', permission: 'members:update' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.members.update',
      summary: 'Give a member another role (never above the caller\'s own; the last owner keeps theirs)',
      params: MemberParamsSchema,
      body: MemberUpdateSchema,
      response: { 200: described(MemberResponseSchema, 'Updated: the member'), ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request) => ({
    data: await organizations.updateMember(
      request.serviceContext, request.params.id, request.params.userId, request.body.role
    )
  }))

  fastify.delete('/:id/members/:userId', {
    config: { access: { organization: 'id', permission: 'members:remove', self: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.members.delete',
      summary: 'Remove a member, or leave (the caller\'s own id); the last owner cannot leave',
      params: MemberParamsSchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request, reply) => {
    await organizations.removeMember(request.serviceContext, request.params.id, request.params.userId)
    return await reply.code(204).send()
  })
}

export default members
