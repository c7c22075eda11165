import { Errors } from '../../errors.js'
import { authorize, permissionLacked, type Principal } from '../../security/permissions.js'
import type { UserPrincipal, UsersRepository } from '../../store/users.js'

/**
 * The rule for acting on another account (docs/api.md, "Roles and permissions"): `manage_users`
 * and every permission that account holds, the rule for granting roles. So an admin neither
 * changes nor looks into a super_admin's account: its password, devices, sessions, second
 * factors, suspension. One's own account passes. Answers the account, or undefined when there
 * is none (deleting one that does not exist succeeds).
 */
export async function managedAccount (
  users: Pick<UsersRepository, 'findPrincipal'>,
  caller: Principal,
  userId: string
): Promise<UserPrincipal | undefined> {
  const target = await users.findPrincipal(userId)
  if (target === undefined || caller.id === userId) return target
  const missing = permissionLacked(authorize(caller, 'manage_users'), target.roles)
  if (missing !== null) throw new Errors.FORBIDDEN(missing)
  return target
}

/** `managedAccount`, where an account that does not exist is 404. */
export async function assertMayManage (
  users: Pick<UsersRepository, 'findPrincipal'>,
  caller: Principal,
  userId: string
): Promise<UserPrincipal> {
  const target = await managedAccount(users, caller, userId)
  if (target === undefined) throw new Errors.NOT_FOUND('User')
  return target
}
