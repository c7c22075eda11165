import type { Role } from '../../../schemas/rbac.js'
import { Errors } from '../../errors.js'
import { effectiveRoles, permissionLacked, permissionsOf } from '../../security/permissions.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import { type Caller, callerOf, holderOf, type RequestContext } from '../context.js'

/** A user's roles (docs/api.md, "Roles and permissions"). Role changes apply to protected routes at once. */
export class RoleService {
  constructor (private readonly deps: { users: UsersRepository, audit: AuditTrail }) {}

  /** The user's effective roles and the permissions they carry. */
  async assignment (userId: string) {
    const principal = await this.deps.users.findPrincipal(userId)
    if (principal === undefined) throw new Errors.NOT_FOUND('User')
    return { roles: [...effectiveRoles(principal.roles)], permissions: permissionsOf(principal.roles) }
  }

  async assign (context: RequestContext, userId: string, role: Role) {
    // A role granted outlives the key or the impersonation that could ask for it.
    const caller = holderOf(context, 'granting a role')
    await this.#assertMayChange(caller, userId, role)
    await this.deps.audit.recordChange(context, async (trx) => { await this.deps.users.addRole(userId, role, trx) },
      () => [{ event: 'role.assigned', outcome: 'success', targetId: userId, details: { role } }])
    return await this.assignment(userId)
  }

  /** Harmless when the role is not held. */
  async remove (context: RequestContext, userId: string, role: Role) {
    const caller = callerOf(context)
    await this.#assertMayChange(caller, userId, role)
    await this.deps.audit.recordChange(context, async (trx) => { await this.deps.users.removeRole(userId, role, trx) },
      () => [{ event: 'role.removed', outcome: 'success', targetId: userId, details: { role } }])
    return await this.assignment(userId)
  }

  /**
   * Nobody grants or takes away a role whose permissions they do not hold themselves, nor
   * changes the roles of an account holding a permission they lack (the rule for changing
   * another account, docs/api.md "Roles and permissions"): a moderator may not strip an admin
   * of any role. A user that does not exist is 404, before anything is written or audited.
   */
  async #assertMayChange (caller: Caller, userId: string, role: Role): Promise<void> {
    const target = await this.deps.users.findPrincipal(userId)
    if (target === undefined) throw new Errors.NOT_FOUND('User')
    const missing = permissionLacked(caller, [role, ...target.roles])
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
  }
}
