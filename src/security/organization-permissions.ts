import { ORGANIZATION_ROLES, type OrganizationPermission, type OrganizationRole } from '../../schemas/organizations.js'
import { hasPermission, type Principal } from './permissions.js'

/** The organization role table (docs/api.md, "Organizations"), in the style of the global one. */
const GRANTS: Record<OrganizationRole, readonly OrganizationPermission[]> = {
  member: ['org:read', 'members:read'],
  admin: ['org:read', 'org:update', 'members:read', 'members:invite', 'members:update', 'members:remove'],
  owner: ['org:read', 'org:update', 'org:delete', 'members:read', 'members:invite', 'members:update', 'members:remove', 'sso:manage']
}

/** What a global administrator may read of any organization without being a member. */
const GLOBAL_READER: readonly OrganizationPermission[] = ['org:read', 'members:read']

/** A role's place in the order member < admin < owner. */
export function rankOf (role: OrganizationRole): number {
  return ORGANIZATION_ROLES.indexOf(role)
}

export function organizationPermissionsOf (role: OrganizationRole): readonly OrganizationPermission[] {
  return GRANTS[role]
}

/**
 * How the caller stands in an organization: as a member (with their role), as a global
 * super_admin (acting as an owner of every organization, audited), as a global administrator
 * (reading any organization), or not at all.
 */
export type Standing =
  | { kind: 'member', role: OrganizationRole }
  | { kind: 'super_admin', role: 'owner' }
  | { kind: 'global_reader' }
  | { kind: 'none' }

/** The caller's standing from their global roles and their membership role (undefined: none). */
export function standingOf (principal: Principal, membership: OrganizationRole | undefined): Standing {
  if (membership !== undefined) {
    // A super_admin who is a plain member still acts as an owner: their global right is the larger.
    if (membership !== 'owner' && hasPermission(principal, 'admin')) return { kind: 'super_admin', role: 'owner' }
    return { kind: 'member', role: membership }
  }
  if (hasPermission(principal, 'admin')) return { kind: 'super_admin', role: 'owner' }
  if (hasPermission(principal, 'manage_users')) return { kind: 'global_reader' }
  return { kind: 'none' }
}

/** An organization's API key acts with its role in its own organization, and sees no other. */
export function keyStandingIn (key: { id: string, role: OrganizationRole }, organizationId: string): Standing {
  return key.id === organizationId ? { kind: 'member', role: key.role } : { kind: 'none' }
}

/**
 * The outcome of checking an organization permission: granted, refused (403, the caller can see
 * the organization), or hidden (404: the caller is no member, so the organization's existence is
 * not told).
 */
export type OrganizationDecision = 'granted' | 'refused' | 'hidden'

export function decide (standing: Standing, permission: OrganizationPermission): OrganizationDecision {
  if (standing.kind === 'none') return 'hidden'
  return actingPermissions(actingRole(standing)).includes(permission) ? 'granted' : 'refused'
}

/** What one acting with `role` may do in an organization they can see (null: a global reader). */
export function actingPermissions (role: OrganizationRole | null): readonly OrganizationPermission[] {
  return role === null ? GLOBAL_READER : GRANTS[role]
}

/**
 * The role the caller acts with in the organization, or null when they act with none (a global
 * reader, an outsider).
 */
export function actingRole (standing: Standing): OrganizationRole | null {
  return standing.kind === 'member' || standing.kind === 'super_admin' ? standing.role : null
}

/**
 * Whether one acting as `actor` may give `role` (by invitation or change): nobody grants a role
 * above their own.
 */
export function mayGrant (actor: OrganizationRole, role: OrganizationRole): boolean {
  return rankOf(role) <= rankOf(actor)
}

/** Whether one acting as `actor` may change or remove a member holding `target`: never one who ranks above them. */
export function mayManage (actor: OrganizationRole, target: OrganizationRole): boolean {
  return rankOf(target) <= rankOf(actor)
}
