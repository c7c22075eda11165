import type { Role } from '../../schemas/rbac.js'
import { Errors } from '../errors.js'
import { effectiveRoles, permissionLacked, permissionsOf } from '../security/permissions.js'
import type { UsersRepository } from '../store/users.js'
import type { AuditTrail } from './audit-trail.js'
import { authorize } from './authorization.js'
import type { Caller, RequestContext } from './context.js'

/** A user's roles (docs/api.md, "Roles and permissions"). Role changes apply to protected routes at once. */
export class RoleService {
  constructor (private readonly deps: { users: UsersRepository, audit: AuditTrail }) {}

  /** The user's effective roles and the permissions they carry. */
  async assignment (userId: string) {
    const principal = await this.deps.users.findPrincipal(userId)
    if (principal === undefined) throw new Errors.NOT_FOUND('User')
    return { roles: [...effectiveRoles(principal.roles)], permissions: permissionsOf(principal.roles) }
  }

  async assign (context: RequestContext, caller: Caller, userId: string, role: Role) {
    this.#assertMayGrant(caller, role)
    await this.assignment(userId) // 404 before writing for a user that does not exist
    await this.deps.audit.recordChange(context, async (trx) => { await this.deps.users.addRole(userId, role, trx) },
      () => [{ event: 'role.assigned', outcome: 'success', targetId: userId, details: { role } }])
    return await this.assignment(userId)
  }

  /** Harmless when the role is not held. */
  async remove (context: RequestContext, caller: Caller, userId: string, role: Role) {
    this.#assertMayGrant(caller, role)
    await this.assignment(userId) // 404 before writing (and auditing a removal) for a user that does not exist
    await this.deps.audit.recordChange(context, async (trx) => { await this.deps.users.removeRole(userId, role, trx) },
      () => [{ event: 'role.removed', outcome: 'success', targetId: userId, details: { role } }])
    return await this.assignment(userId)
  }

  /** Nobody grants or takes away a role whose permissions they do not hold themselves. */
  #assertMayGrant (caller: Caller, role: Role): void {
    const missing = permissionLacked(authorize(caller, 'manage_roles'), [role])
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
  }
}
