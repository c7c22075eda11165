import { Errors } from '../../errors.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { ScimResourcesRepository } from '../../store/scim.js'
import type { Db, ScimUsersTable } from '../../store/types.js'
import type { AuditChange } from '../audit/index.js'
import type { DirectoryStanding } from '../context.js'
import type { SessionService } from '../sessions/index.js'
import { mappedRole } from '../sso/index.js'

/** A change to one account's membership: its audit entries, and the revocation to run once committed. */
export interface MembershipOutcome { entries: AuditChange[], revokeAccess: () => Promise<void> }

export const NO_CHANGE: MembershipOutcome = { entries: [], revokeAccess: async () => {} }

export interface ScimMembershipsDependencies {
  organizations: OrganizationsRepository
  scimResources: ScimResourcesRepository
  sessions: SessionService
  now?: () => number
}

/**
 * What a directory's Users and Groups do to the organization (docs/api.md, "SCIM
 * provisioning"), in the transaction of their change: an active User is a member with the role
 * its groups map to; a deactivated or deleted one is none, its sessions there ended at once.
 */
export class ScimMemberships {
  readonly #now: () => number

  constructor (private readonly deps: ScimMembershipsDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * The account joins (or stays in) the organization with the role its groups map to; a
   * member's role follows the groups when the directory maps groups (the last owner keeps theirs).
   */
  async join (directory: DirectoryStanding, user: ScimUsersTable, trx: Db): Promise<MembershipOutcome> {
    const { organizations, scimResources, sessions } = this.deps
    const mapped = Object.keys(directory.roleMapping).length > 0
    const { organizationId, roleMapping, defaultRole } = directory
    const role = mappedRole(await scimResources.groupNamesOf(user.id, trx), roleMapping, defaultRole)
    const now = new Date(this.#now()).toISOString()
    const membership = await organizations.vouchedMembership(organizationId, user.user_id, role, mapped, now, trx)
    if (membership === undefined) throw new Errors.NOT_FOUND('Organization')
    if (membership.previous === membership.role) return NO_CHANGE
    const details = { organization_id: directory.organizationId, role: membership.role, directory_id: directory.id }
    if (membership.previous === undefined) {
      return { entries: [{ event: 'membership.added', outcome: 'success', targetId: user.user_id, details }], revokeAccess: async () => {} }
    }
    return {
      entries: [{ event: 'membership.role_changed', outcome: 'success', targetId: user.user_id, details: { ...details, previous_role: membership.previous } }],
      revokeAccess: await sessions.organizationChangedWithin(organizationId, user.user_id, { forget: false }, trx)
    }
  }

  /** The account leaves the organization: its sessions there forget it, its access tokens for it are revoked. */
  async leave (directory: DirectoryStanding, userId: string, trx: Db): Promise<MembershipOutcome> {
    const { organizations, sessions } = this.deps
    const removed = await organizations.removeMember(directory.organizationId, userId, () => true, trx)
    if (removed === 'last_owner') throw new Errors.CONFLICT('This person is the organization\'s last owner: make another owner first')
    if (typeof removed === 'string') return NO_CHANGE
    return {
      entries: [{
        event: 'membership.removed', outcome: 'success', targetId: userId, details: { organization_id: directory.organizationId, previous_role: removed.previous.role, directory_id: directory.id }
      }],
      revokeAccess: await sessions.organizationChangedWithin(directory.organizationId, userId, { forget: true }, trx)
    }
  }

  /** The active users among `scimUserIds` take the role their groups map to now. */
  async rejoin (directory: DirectoryStanding, scimUserIds: string[], trx: Db): Promise<MembershipOutcome> {
    if (Object.keys(directory.roleMapping).length === 0 || scimUserIds.length === 0) return NO_CHANGE
    const users = await this.deps.scimResources.usersAmong(directory.id, scimUserIds, trx)
    const outcomes: MembershipOutcome[] = []
    for (const user of users) if (user.active === 1) outcomes.push(await this.join(directory, user, trx))
    return {
      entries: outcomes.flatMap((outcome) => outcome.entries),
      revokeAccess: async () => { for (const outcome of outcomes) await outcome.revokeAccess() }
    }
  }
}
