import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { BEARER, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { type Role, RoleAssignmentResponseSchema, RoleParamsSchema } from '../../../schemas/rbac.js'
import { Errors } from '../../errors.js'
import { effectiveRoles, permissionLacked, permissionsOf } from '../../security/permissions.js'

/** CONTRACT section 6: a user's roles. Role changes apply to protected routes at once. */
const roles: FastifyPluginAsyncTypebox = async (fastify) => {
  const { users } = fastify.repositories

  async function assignment (userId: string) {
    const principal = await users.findPrincipal(userId)
    if (principal === undefined) throw new Errors.NOT_FOUND('User')
    return { data: { roles: [...effectiveRoles(principal.roles)], permissions: permissionsOf(principal.roles) } }
  }

  /**
   * Nobody grants or takes away a role whose permissions they do not hold themselves.
   * A preHandler: it needs the validated role name.
   */
  async function mayGrant (request: FastifyRequest) {
    const granter = fastify.authorize(request, 'manage_roles')
    const missing = permissionLacked(granter, [(request.params as { role: Role }).role])
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
  }

  fastify.get('/:id/roles', {
    onRequest: [fastify.authenticate, fastify.requireSelfOr('manage_roles')],
    schema: {
      tags: ['roles'],
      summary: 'A user\'s roles and effective permissions (self, or manage_roles)',
      security: BEARER,
      params: IdParamsSchema,
      response: { 200: RoleAssignmentResponseSchema, ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await assignment(request.params.id))

  fastify.put('/:id/roles/:role', {
    onRequest: [fastify.authenticate, fastify.requirePermission('manage_roles')],
    preHandler: mayGrant,
    config: { adminOperation: true },
    schema: {
      tags: ['roles'],
      summary: 'Assign a role',
      security: BEARER,
      params: RoleParamsSchema,
      response: { 200: RoleAssignmentResponseSchema, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, role } = request.params
    await assignment(id) // 404 before writing for a user that does not exist
    await users.addRole(id, role)
    request.audit('role.assigned', { outcome: 'success', targetId: id, details: { role } })
    return await assignment(id)
  })

  fastify.delete('/:id/roles/:role', {
    onRequest: [fastify.authenticate, fastify.requirePermission('manage_roles')],
    preHandler: mayGrant,
    config: { adminOperation: true },
    schema: {
      tags: ['roles'],
      summary: 'Remove a role (harmless when not held)',
      security: BEARER,
      params: RoleParamsSchema,
      response: { 200: RoleAssignmentResponseSchema, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => {
    const { id, role } = request.params
    await assignment(id) // 404 before writing (and auditing a removal) for a user that does not exist
    await users.removeRole(id, role)
    request.audit('role.removed', { outcome: 'success', targetId: id, details: { role } })
    return await assignment(id)
  })
}

export default roles
