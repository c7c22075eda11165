import type { Permission, Role } from '../../schemas/rbac.js'
import { Errors } from '../errors.js'

/**
 * The role table (docs/api.md, "Roles and permissions"). Each permission is held either on
 * any resource or, for `user`'s write/delete family, on the holder's own resources only
 * (docs/api.md, "Deliberate departures", item 2).
 */
interface Grant { any: readonly Permission[], own: readonly Permission[] }

const GRANTS: Record<Role, Grant> = {
  anonymous: { any: ['read'], own: [] },
  user: { any: ['read', 'create'], own: ['write', 'update', 'delete'] },
  moderator: { any: ['read', 'write', 'create', 'update', 'delete', 'manage_roles'], own: [] },
  admin: {
    any: ['read', 'write', 'create', 'update', 'delete', 'manage_users', 'manage_roles', 'view_audit_logs'],
    own: []
  },
  super_admin: { any: ['admin'], own: [] }
}

/** No assigned role means `anonymous`. */
export function effectiveRoles (roles: readonly Role[]): readonly Role[] {
  return roles.length === 0 ? ['anonymous'] : roles
}

/** Several roles hold the union of their sets (own-scoped permissions included). */
export function permissionsOf (roles: readonly Role[]): Permission[] {
  const permissions = new Set<Permission>()
  for (const role of effectiveRoles(roles)) {
    for (const permission of [...GRANTS[role].any, ...GRANTS[role].own]) permissions.add(permission)
  }
  return [...permissions]
}

/** Permissions the owner of a resource holds on it, whatever its roles. */
const OWNER_PERMISSIONS: ReadonlySet<Permission> = new Set(['read', 'write', 'delete'])

/** An API key's caller holds only what its scopes name as well (docs/api.md, "API keys"). */
export interface Principal { id: string, roles: readonly Role[], apiKey?: { scopes: readonly string[] } }

/**
 * The permission check (docs/api.md, "Roles and permissions"): `admin` passes everything;
 * the owner of a resource may read, write and delete it; otherwise the permission must be
 * held. An own-scoped grant counts only when there is no resource (creating) or the caller
 * owns it.
 */
export function hasPermission (principal: Principal, permission: Permission, ownerId?: string): boolean {
  const scopes = principal.apiKey?.scopes
  if (scopes !== undefined && !scopes.includes(permission) && !scopes.includes('admin')) return false
  const isOwner = ownerId !== undefined && ownerId === principal.id
  if (isOwner && OWNER_PERMISSIONS.has(permission)) return true
  for (const role of effectiveRoles(principal.roles)) {
    const grant = GRANTS[role]
    if (grant.any.includes('admin') || grant.any.includes(permission)) return true
    if ((ownerId === undefined || isOwner) && grant.own.includes(permission)) return true
  }
  return false
}

/**
 * The caller, when it holds `permission` (on a resource of `ownerId`, when given); throws
 * `Authentication required` without a caller, `Permission denied. Requires: <permission>` without it.
 */
export function authorize<Caller extends Principal> (
  caller: Caller | null,
  permission: Permission,
  ownerId?: string
): Caller {
  if (caller === null) throw new Errors.AUTHENTICATION_REQUIRED()
  if (!hasPermission(caller, permission, ownerId)) throw new Errors.FORBIDDEN(permission)
  return caller
}

/**
 * The first permission `roles` carry that `principal` lacks, or null. A role may be granted
 * (or taken away) only by someone holding every permission it carries.
 * The same holds for changing or deleting another account: one who may not grant its roles
 * may not reset its password either (an admin who could would sign in as a super_admin and
 * grant themselves super_admin).
 */
export function permissionLacked (principal: Principal, roles: readonly Role[]): Permission | null {
  return permissionsOf(roles).find((permission) => !hasPermission(principal, permission)) ?? null
}

/** What the MFA requirement looks at: the roles, and the second factors that meet it. */
export interface FactorHolder { roles: readonly Role[], mfaEnabled: boolean, hasPasskey: boolean }

/** Whether a role of the account is one of MFA_REQUIRED_ROLES (docs/api.md, "Required roles"). */
export function mfaRequired (account: Pick<FactorHolder, 'roles'>, requiredRoles: readonly Role[]): boolean {
  return account.roles.some((role) => requiredRoles.includes(role))
}

/**
 * Whether the account must enrol a second factor before anything else: its role requires MFA and
 * it has neither TOTP nor a passkey (docs/api.md, "Required roles"). The API answers such an
 * account 403 MFA_ENROLLMENT_REQUIRED on every route but enrolment, and no sign-in at the
 * authorization server completes for it.
 */
export function mustEnrolMfa (account: FactorHolder, requiredRoles: readonly Role[]): boolean {
  return !account.mfaEnabled && !account.hasPasskey && mfaRequired(account, requiredRoles)
}
