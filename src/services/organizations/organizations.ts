import {
  MEMBER_FIELDS, ORGANIZATION_FIELDS, type OrganizationCreate, type OrganizationRole, type OrganizationUpdate
} from '../../../schemas/organizations.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, limitReached, rethrowServiceError } from '../../errors.js'
import { mayGrant, mayManage } from '../../security/organization-permissions.js'
import { apiKeyRevocationId } from '../../security/api-keys.js'
import { hasPermission } from '../../security/permissions.js'
import { type ApiKeysRepository, DELETED_KEY_REVOCATION_MS } from '../../store/api-keys.js'
import type { Member, MembershipChange, MembershipRefusal, Organization, OrganizationsRepository } from '../../store/organizations.js'
import type { Db } from '../../store/types.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import { actingRoleIn } from './standing.js'

const DAY_MS = 24 * 60 * 60 * 1000
/** Organizations one account may create per day: nobody makes organizations by the hundred to send invitations from. */
export const ORGANIZATIONS_PER_DAY = 10

export interface OrganizationServiceDependencies {
  organizations: OrganizationsRepository
  users: UsersRepository
  sessions: SessionService
  notices: Notices
  audit: AuditTrail
  cursors: CursorCodec
  /** An organization's deletion deletes its API keys: each refused at once on every instance. */
  apiKeys: Pick<ApiKeysRepository, 'deleteOwnedBy'>
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  now?: () => number
}

/** The error a refused membership change answers. */
function membershipError (refusal: MembershipRefusal): Error {
  switch (refusal) {
    case 'no_organization': return new Errors.NOT_FOUND('Organization')
    case 'not_found': return new Errors.NOT_FOUND('Member')
    case 'last_owner': return new Errors.CONFLICT('An organization keeps at least one owner')
    case 'outranked': return new Errors.FORBIDDEN('a role at least that of the member')
  }
}

/**
 * Organizations and their members (docs/api.md, "Organizations"). Routes declare the
 * organization permission a call needs, and the access plugin checks it against the caller's
 * role in the organization of the path; this service keeps what depends on the target: ranks
 * (nobody grants above their own role, nor changes one who ranks above them) and the last owner.
 */
export class OrganizationService {
  readonly #now: () => number

  constructor (private readonly deps: OrganizationServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * Creates an organization owned by the caller, whose address must have been proved: an
   * unclaimed account holds nothing another could inherit by claiming it (docs/security.md,
   * "Account claiming").
   */
  async create (context: RequestContext, input: OrganizationCreate): Promise<Organization> {
    const caller = callerOf(context)
    const principal = await this.deps.users.findPrincipal(caller.id)
    if (principal === undefined) throw new Errors.INVALID_TOKEN()
    if (!principal.claimed) throw new Errors.EMAIL_NOT_VERIFIED()
    const now = this.#now()
    const limit = { max: ORGANIZATIONS_PER_DAY, since: new Date(now - DAY_MS).toISOString() }
    const created = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizations.create(input, caller.id, new Date(now).toISOString(), limit, trx)
        .catch(rethrowServiceError),
      (organization) => 'retryAt' in organization
        ? []
        : [{ event: 'organization.created', outcome: 'success', details: { organization_id: organization.id, slug: organization.slug } }])
    if ('retryAt' in created) throw limitReached(created.retryAt, now)
    return created
  }

  /** The caller's organizations; every organization for a global administrator. */
  async list (context: RequestContext, query: CollectionQueryInput) {
    const caller = callerOf(context)
    const all = hasPermission(caller, 'manage_users')
    return await collectionPage(query, {
      ...ORGANIZATION_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `organizations:${all ? '*' : ''}:${caller.id}`
    }, this.deps.cursors, async (request) => all
      ? await this.deps.organizations.listAll(caller.id, request)
      : await this.deps.organizations.listOfMember(caller.id, request))
  }

  async get (context: RequestContext, organizationId: string): Promise<Organization> {
    const organization = await this.deps.organizations.find(organizationId, callerOf(context).id)
    if (organization === undefined) throw new Errors.NOT_FOUND('Organization')
    return organization
  }

  /** Renames or re-slugs; an empty change answers the organization as it is. */
  async update (context: RequestContext, organizationId: string, changes: OrganizationUpdate): Promise<Organization> {
    const caller = callerOf(context)
    if (Object.keys(changes).length === 0) return await this.get(context, organizationId)
    const now = new Date(this.#now()).toISOString()
    const organization = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizations.update(organizationId, changes, caller.id, now, trx)
        .catch(rethrowServiceError),
      (updated) => updated === undefined
        ? []
        : [{ event: 'organization.updated', outcome: 'success', details: { organization_id: organizationId, fields: Object.keys(changes) } }])
    if (organization === undefined) throw new Errors.NOT_FOUND('Organization')
    return organization
  }

  /**
   * Deletes the organization with its members and invitations, never its users; the sessions
   * that spoke for it forget it and their access tokens are revoked.
   */
  async remove (context: RequestContext, organizationId: string): Promise<void> {
    holderOf(context, 'deleting the organization')
    const { organizations, sessions, audit, apiKeys, revokeAccessToken } = this.deps
    const { members, revokeAccess, keys } = await audit.recordChange(context, async (trx) => {
      const keys = await apiKeys.deleteOwnedBy({ organizationId }, trx)
      const members = await organizations.delete(organizationId, trx)
      const revokeAccess = members === undefined
        ? async () => {}
        : await sessions.organizationChangedWithin(organizationId, undefined, { forget: true }, trx)
      return { members, revokeAccess, keys }
    }, ({ members }) => members === undefined
      ? []
      : [{ event: 'organization.deleted', outcome: 'success', details: { organization_id: organizationId, members } }])
    if (members === undefined) throw new Errors.NOT_FOUND('Organization')
    await revokeAccess()
    const until = new Date(this.#now() + DELETED_KEY_REVOCATION_MS)
    await Promise.all(keys.map(async (id) => { await revokeAccessToken(apiKeyRevocationId(id), until) }))
  }

  async listMembers (context: RequestContext, organizationId: string, query: CollectionQueryInput) {
    callerOf(context)
    return await collectionPage(query, {
      ...MEMBER_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `organization-members:${organizationId}`
    }, this.deps.cursors, async (request) => await this.deps.organizations.listMembers(organizationId, request))
  }

  /**
   * Gives a member another role: one no higher than the caller's own, to a member who does not
   * rank above the caller; the last owner keeps theirs. The member's sessions that speak for the
   * organization get tokens with the new role at their next refresh; those issued before are revoked.
   */
  async updateMember (
    context: RequestContext,
    organizationId: string,
    userId: string,
    role: OrganizationRole
  ): Promise<Member> {
    if (role !== 'member') holderOf(context, `granting the ${role} role`)
    const acting = await actingRoleIn(context, organizationId, this.deps.organizations)
    if (!mayGrant(acting, role)) throw new Errors.FORBIDDEN(`the ${role} role`)
    const previous = await this.#changeMembership(context, organizationId, userId, 'organization_role_changed',
      async (trx) => await this.deps.organizations.changeRole(
        organizationId, userId, role, (current) => mayManage(acting, current), trx
      ),
      (member) => [{
        event: 'membership.role_changed', outcome: 'success', targetId: userId, details: { organization_id: organizationId, role, previous_role: member.role }
      }])
    return { ...previous, role }
  }

  /**
   * Removes a member, or lets a member leave (their own id): any member may leave, except the
   * last owner; removing another needs a rank at least theirs.
   */
  async removeMember (context: RequestContext, organizationId: string, userId: string): Promise<void> {
    const leaving = callerOf(context).id === userId
    const acting = leaving ? null : await actingRoleIn(context, organizationId, this.deps.organizations)
    await this.#changeMembership(context, organizationId, userId, 'organization_membership_removed',
      async (trx) => await this.deps.organizations.removeMember(
        organizationId, userId, (current) => acting === null || mayManage(acting, current), trx
      ),
      (member) => [{
        event: leaving ? 'membership.left' : 'membership.removed', outcome: 'success', targetId: userId, details: { organization_id: organizationId, previous_role: member.role }
      }])
  }

  /**
   * A membership change with its audit entries, the notice to the member (unless they made it
   * themselves) and, for a removal, the forgetting of the organization by the member's sessions,
   * in one transaction; the access tokens that carry the old membership are revoked once it is
   * committed. Answers the member as they were.
   */
  async #changeMembership (
    context: RequestContext,
    organizationId: string,
    userId: string,
    notice: 'organization_role_changed' | 'organization_membership_removed',
    change: (trx: Db) => Promise<MembershipChange | MembershipRefusal>,
    entriesOf: (previous: Member) => AuditChange[]
  ): Promise<Member> {
    const { audit, notices, sessions } = this.deps
    const notify = callerOf(context).id !== userId
    const outcome = await audit.recordChange(context, async (trx) => {
      const result = await change(trx)
      if (typeof result === 'string') return result
      const { previous, organization } = result
      if (notify) await notices.add(previous.email, notice, trx, `Organization: ${organization.name} (${organization.slug})`)
      const forget = notice === 'organization_membership_removed'
      const revokeAccess = await sessions.organizationChangedWithin(organizationId, userId, { forget }, trx)
      return { previous, revokeAccess }
    }, (result) => typeof result === 'string' ? [] : entriesOf(result.previous))
    if (typeof outcome === 'string') throw membershipError(outcome)
    if (notify) notices.deliver()
    await outcome.revokeAccess()
    return outcome.previous
  }
}
