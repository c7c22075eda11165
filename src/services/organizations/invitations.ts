import { INVITATION_FIELDS, type Invitation, type InvitationCreate, type Organization, type OrganizationRole } from '../../../schemas/organizations.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, limitReached, rethrowServiceError } from '../../errors.js'
import { actingRole, mayGrant, standingOf } from '../../security/organization-permissions.js'
import { hashToken, newOneTimeToken } from '../../security/tokens.js'
import type { InvitationsRepository } from '../../store/invitations.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { ScimResourcesRepository } from '../../store/scim.js'
import { normalizeEmail, type UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, personOf, type RequestContext } from '../context.js'
import type { MessageTemplates } from '../messaging/index.js'
import { actingRoleIn } from './standing.js'

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR
/** An invitation is good this long (docs/api.md, "Organizations"). */
export const INVITATION_TTL_MS = 7 * DAY
/** Invitations an organization may send per hour: nobody floods inboxes through one. */
export const INVITATIONS_PER_HOUR = 50
/** Invitations one account may send per hour, across every organization it may invite to. */
export const INVITATIONS_PER_INVITER_PER_HOUR = 50
/**
 * Invitations one account may send one address per day, across organizations (invite, withdraw
 * and invite again each count): nobody floods one inbox through many organizations.
 */
export const INVITATIONS_PER_INVITER_AND_ADDRESS_PER_DAY = 3
/**
 * Invitations one address may receive per day, from anyone: a cap on floods from many accounts,
 * high enough that a few invitations of an attacker's do not keep the address's real ones away.
 */
export const INVITATIONS_PER_ADDRESS_PER_DAY = 20

export interface InvitationServiceDependencies {
  organizations: OrganizationsRepository
  invitations: InvitationsRepository
  users: UsersRepository
  /** Whom the organization's SCIM directory deactivated: they join through no invitation. */
  scimResources: ScimResourcesRepository
  templates: MessageTemplates
  audit: AuditTrail
  cursors: CursorCodec
  deliver: () => void
  now?: () => number
}

/**
 * Invitations to organizations (docs/api.md, "Organizations"): sent by e-mail through the
 * outbox, single use, kept as the SHA-256 of their token, expiring after INVITATION_TTL_MS, the
 * role fixed when inviting; accepted by a signed-in account whose verified address is the
 * invited one.
 */
export class InvitationService {
  readonly #now: () => number

  constructor (private readonly deps: InvitationServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** Invites an address with a role no higher than the caller's own; the message is stored with the invitation. */
  async invite (
    context: RequestContext,
    organizationId: string,
    { email, role }: InvitationCreate
  ): Promise<Invitation> {
    const { organizations, invitations, templates, audit } = this.deps
    const caller = callerOf(context)
    // Acceptance checks that the inviter may still grant the role: an invitation is a person's.
    const inviter = personOf(caller)
    if (inviter === null) throw new Errors.API_KEY_RESTRICTED('inviting (an invitation is a member\'s)')
    if (role !== 'member') holderOf(context, `granting the ${role} role`)
    const acting = await actingRoleIn(context, organizationId, organizations)
    if (!mayGrant(acting, role)) throw new Errors.FORBIDDEN(`the ${role} role`)
    const now = this.#now()
    const { token, hash } = newOneTimeToken()
    const outcome = await audit.recordChange(context, async (trx) => await invitations.invite(
      {
        organizationId,
        email,
        role,
        tokenHash: hash,
        invitedBy: inviter,
        expiresAt: new Date(now + INVITATION_TTL_MS).toISOString()
      },
      ({ name }) => templates.organizationInvitation(normalizeEmail(email), name, role, token, INVITATION_TTL_MS / DAY),
      new Date(now).toISOString(),
      {
        organization: { max: INVITATIONS_PER_HOUR, since: new Date(now - HOUR).toISOString() },
        inviter: { max: INVITATIONS_PER_INVITER_PER_HOUR, since: new Date(now - HOUR).toISOString() },
        pair: { max: INVITATIONS_PER_INVITER_AND_ADDRESS_PER_DAY, since: new Date(now - DAY).toISOString() },
        address: { max: INVITATIONS_PER_ADDRESS_PER_DAY, since: new Date(now - DAY).toISOString() }
      },
      trx
    ), (result) => typeof result === 'object' && 'id' in result
      ? [{ event: 'invitation.created', outcome: 'success', details: { organization_id: organizationId, invitation_id: result.id, role } }]
      : [])
    if (outcome === undefined) throw new Errors.NOT_FOUND('Organization')
    if (outcome === 'member') throw new Errors.CONFLICT('This address belongs to a member already')
    if (outcome === 'pending') throw new Errors.CONFLICT('This address has a pending invitation; withdraw it to invite again')
    if ('retryAt' in outcome) throw limitReached(outcome.retryAt, now)
    this.deps.deliver()
    return outcome
  }

  async list (context: RequestContext, organizationId: string, query: CollectionQueryInput) {
    callerOf(context)
    return await collectionPage(query, {
      ...INVITATION_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `organization-invitations:${organizationId}`
    }, this.deps.cursors, async (request) => await this.deps.invitations.list(organizationId, request))
  }

  /** Withdraws one of the organization's invitations: its token stops working. */
  async revoke (context: RequestContext, organizationId: string, invitationId: string): Promise<void> {
    const now = new Date(this.#now()).toISOString()
    const revoked = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.invitations.revoke(organizationId, invitationId, now, trx),
      (done) => done ? [{ event: 'invitation.revoked', outcome: 'success', details: { organization_id: organizationId, invitation_id: invitationId } }] : [])
    if (!revoked) throw new Errors.NOT_FOUND('Invitation')
  }

  /**
   * Accepts an invitation for the caller, whose address must be verified and be the invited
   * one: a token forwarded to, or intercepted by, another account is refused and stays good for
   * its addressee. Spending it and the membership are one transaction.
   */
  async accept (context: RequestContext, token: string): Promise<Organization> {
    const { organizations, invitations, users, audit } = this.deps
    const caller = callerOf(context)
    const now = new Date(this.#now()).toISOString()
    const invitation = await invitations.find(hashToken(token), now)
    if (invitation === undefined) throw new Errors.INVALID_ONE_TIME_TOKEN()
    const user = await users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    if (!user.email_verified) throw new Errors.EMAIL_NOT_VERIFIED()
    if (normalizeEmail(user.email) !== invitation.email) throw new Errors.INVITATION_EMAIL_MISMATCH()
    if (await this.deps.scimResources.deprovisioned(invitation.organizationId, caller.id)) {
      throw new Errors.CONFLICT('The organization\'s directory deactivated this account: it joins once the directory reactivates it')
    }
    // The role is granted only while its inviter may still grant it (docs/security.md, "Organization access").
    const inviter = invitation.invitedBy === null ? undefined : await users.findPrincipal(invitation.invitedBy)
    const inviterMayGrant = (inviterRole: OrganizationRole | undefined) => {
      const acting = inviter === undefined ? null : actingRole(standingOf(inviter, inviterRole))
      return acting !== null && mayGrant(acting, invitation.role)
    }
    const details = { organization_id: invitation.organizationId, invitation_id: invitation.id }
    const accepted = await audit.recordChange(context,
      async (trx) => await invitations.accept(invitation, caller.id, now, inviterMayGrant, trx)
        .catch(rethrowServiceError),
      (done) => done === 'inviter_cannot_grant'
        ? [{ event: 'invitation.revoked', outcome: 'success', actorId: null, details: { ...details, reason: 'inviter_cannot_grant' } }]
        : done
          ? [{ event: 'membership.added', outcome: 'success', targetId: caller.id, details: { ...details, role: invitation.role } }]
          : [])
    if (accepted === 'inviter_cannot_grant') {
      throw new Errors.CONFLICT('This invitation was sent by someone who can no longer grant its role; ask the organization for a new one')
    }
    if (!accepted) throw new Errors.INVALID_ONE_TIME_TOKEN()
    const organization = await organizations.find(invitation.organizationId, caller.id)
    if (organization === undefined) throw new Errors.NOT_FOUND('Organization')
    return organization
  }
}
