import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { RoleAssignmentResponseSchema, RoleParamsSchema } from '../../../schemas/rbac.js'

/** A user's roles (docs/api.md, "Roles and permissions"). */
const roles: FastifyPluginAsyncTypebox = async (fastify) => {
  const { roles: assignments } = fastify.services

  fastify.get('/:id/roles', {
    config: { access: { permission: 'manage_roles', self: 'read' } },
    schema: {
      tags: ['roles'],
      operationId: 'users.roles.list',
      summary: 'A user\'s roles and effective permissions (self, or manage_roles)',
      params: IdParamsSchema,
      response: { 200: described(RoleAssignmentResponseSchema, 'The user\'s roles and effective permissions'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await assignments.assignment(request.params.id) }))

  fastify.put('/:id/roles/:role', {
    config: { access: { permission: 'manage_roles' }, adminOperation: true },
    schema: {
      tags: ['roles'],
      operationId: 'users.roles.assign',
      summary: 'Assign a role',
      params: RoleParamsSchema,
      response: { 200: described(RoleAssignmentResponseSchema, 'The user\'s roles and permissions now'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, role } = request.params
    return { data: await assignments.assign(request.serviceContext, id, role) }
  })

  fastify.delete('/:id/roles/:role', {
    config: { access: { permission: 'manage_roles' }, adminOperation: true },
    schema: {
      tags: ['roles'],
      operationId: 'users.roles.remove',
      summary: 'Remove a role (harmless when not held)',
      params: RoleParamsSchema,
      response: { 200: described(RoleAssignmentResponseSchema, 'The user\'s roles and permissions now'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, role } = request.params
    return { data: await assignments.remove(request.serviceContext, id, role) }
  })
}

export default roles
