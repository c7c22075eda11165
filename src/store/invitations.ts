import type { Invitation, OrganizationRole } from '../../schemas/organizations.js'
import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import {
  holdOrganizationRow, type LimitReached, type OrganizationName, type OrganizationsRepository, reached, type WindowLimit
} from './organizations.js'
import type { OutboxRepository, OutgoingMessage } from './outbox.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { atomically, type Db } from './types.js'
import { holdUserRow, normalizeEmail } from './users.js'

const INVITATION_COLUMNS = ['id', 'email', 'role', 'invited_by', 'created_at', 'expires_at'] as const

/**
 * The invitations counted before one more is sent (docs/security.md, "Organization access"):
 * the organization's, the inviter's across organizations, the inviter's to this one address, and
 * the address's from anyone. Withdrawn and accepted ones count too.
 */
export type InvitationLimits = Record<'organization' | 'inviter' | 'pair' | 'address', WindowLimit>

/**
 * Why an invitation was not stored: the address is a member's, or has an unexpired invitation,
 * or a limit was reached.
 */
export type InvitationRefusal = 'member' | 'pending' | LimitReached

/** What inviting stores: the token only as its hash. */
export interface NewInvitation {
  organizationId: string
  email: string
  role: OrganizationRole
  tokenHash: string
  invitedBy: string
  expiresAt: string
}

/** An invitation found by its token, with what accepting it needs. */
export interface PresentedInvitation {
  id: string
  organizationId: string
  email: string
  role: OrganizationRole
  /** Who invited (null once that account is erased): the role is granted only while they may grant it. */
  invitedBy: string | null
}

/** Invitations into organizations (docs/api.md, "Invitations"), each with the message that carries its token. */
export class InvitationsRepository {
  readonly #open

  constructor (
    private readonly db: Db,
    pages: PageStore,
    private readonly outbox: OutboxRepository,
    private readonly organizations: Pick<OrganizationsRepository, 'roleOf'>
  ) {
    this.#open = new PageQueries<Invitation, { organizationId: string }>(({ organizationId }) =>
      db.selectFrom('organization_invitations').where('organization_id', '=', organizationId).where('closed_at', 'is', null),
    INVITATION_COLUMNS, pages, { searchIn: ['email'] })
  }

  /**
   * Stores an invitation and the message that carries its token (`messageFor` the organization
   * as its held row names it), with the organization's row held: refused when the address
   * belongs to a member, has an open unexpired invitation here, or the organization sent
   * `limit.max` invitations since `limit.since` (accepted and withdrawn ones count: withdrawing
   * does not buy more messages).
   */
  async invite (
    invitation: NewInvitation,
    messageFor: (organization: OrganizationName) => OutgoingMessage,
    now: string,
    limits: InvitationLimits,
    db: Db = this.db
  ): Promise<Invitation | InvitationRefusal | undefined> {
    const email = normalizeEmail(invitation.email)
    const { organizationId } = invitation
    return await atomically(db, async (trx) => {
      const organization = await holdOrganizationRow(trx, organizationId)
      if (organization === undefined) return undefined
      const member = await trx.selectFrom('users').innerJoin('organization_members as m', 'm.user_id', 'users.id')
        .select('users.id').where('users.email', '=', email).where('m.organization_id', '=', organizationId).executeTakeFirst()
      if (member !== undefined) return 'member'
      const pending = await trx.selectFrom('organization_invitations').select('id')
        .where('organization_id', '=', organizationId).where('email', '=', email).where('expires_at', '>', now)
        .where('closed_at', 'is', null).executeTakeFirst()
      if (pending !== undefined) return 'pending'
      const counted = (limit: WindowLimit) => trx.selectFrom('organization_invitations')
        .select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.min('created_at').as('oldest')])
        .where('created_at', '>', limit.since)
      // The inviter's row is held too: their invitations to other organizations at once are counted one after another.
      await holdUserRow(trx, invitation.invitedBy)
      const counts: Array<[WindowLimit, typeof counted]> = [
        [limits.organization, (limit) => counted(limit).where('organization_id', '=', organizationId)],
        [limits.inviter, (limit) => counted(limit).where('invited_by', '=', invitation.invitedBy)],
        [limits.pair, (limit) => counted(limit).where('invited_by', '=', invitation.invitedBy).where('email', '=', email)],
        [limits.address, (limit) => counted(limit).where('email', '=', email)]
      ]
      for (const [limit, query] of counts) {
        const refusal = reached(await query(limit).executeTakeFirst(), limit, now)
        if (refusal !== null) return refusal
      }
      const row = {
        id: uuidv7(),
        email,
        role: invitation.role,
        invited_by: invitation.invitedBy,
        created_at: now,
        expires_at: invitation.expiresAt
      }
      await trx.insertInto('organization_invitations')
        .values({ ...row, organization_id: organizationId, token_hash: invitation.tokenHash, closed_at: null })
        .execute()
      await this.outbox.add(messageFor(organization), now, trx)
      return row
    })
  }

  async list (organizationId: string, request: CollectionRequest): Promise<CollectionResult<Invitation>> {
    return await this.#open.run(request, { organizationId })
  }

  /** Withdraws one of the organization's open invitations; false when it has none with this id. */
  async revoke (
    organizationId: string,
    invitationId: string,
    now: string,
    db: Db = this.db
  ): Promise<boolean> {
    const result = await db.updateTable('organization_invitations').set({ closed_at: now })
      .where('id', '=', invitationId).where('organization_id', '=', organizationId).where('closed_at', 'is', null).executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** The open, unexpired invitation with this token hash, without spending it. */
  async find (tokenHash: string, now: string): Promise<PresentedInvitation | undefined> {
    const row = await this.db.selectFrom('organization_invitations').select(['id', 'organization_id', 'email', 'role', 'invited_by'])
      .where('token_hash', '=', tokenHash).where('expires_at', '>', now).where('closed_at', 'is', null).executeTakeFirst()
    return row === undefined
      ? undefined
      : { id: row.id, organizationId: row.organization_id, email: row.email, role: row.role, invitedBy: row.invited_by }
  }

  /**
   * Spends the invitation and makes `userId` a member with its role, in one transaction: closing
   * it is the single use (of two simultaneous acceptances one finds it closed). The role is
   * granted only if its inviter may still grant it (`inviterMayGrant`, given the inviter's
   * membership role now, or undefined); else the invitation is closed unused
   * ('inviter_cannot_grant'). The organization's row is held first, so that a change of the
   * inviter's role commits wholly before or after. Answers false when it was spent or withdrawn
   * meanwhile; StoreConflict 'already_member' when the user is one.
   */
  async accept (
    invitation: PresentedInvitation,
    userId: string,
    now: string,
    inviterMayGrant: (inviterRole: OrganizationRole | undefined) => boolean,
    db: Db = this.db
  ): Promise<boolean | 'inviter_cannot_grant'> {
    try {
      return await atomically(db, async (trx) => {
        if (await holdOrganizationRow(trx, invitation.organizationId) === undefined) return false
        const { organizations } = this
        if (await organizations.roleOf(invitation.organizationId, userId, trx) !== undefined) throw new StoreConflict('already_member')
        const { invitedBy, organizationId: organization } = invitation
        const inviterRole = invitedBy === null ? undefined : await organizations.roleOf(organization, invitedBy, trx)
        const grantable = invitedBy !== null && inviterMayGrant(inviterRole)
        const spent = await trx.updateTable('organization_invitations').set({ closed_at: now })
          .where('id', '=', invitation.id).where('closed_at', 'is', null).executeTakeFirst()
        if (spent.numUpdatedRows === 0n) return false
        if (!grantable) return 'inviter_cannot_grant'
        const { organizationId, role } = invitation
        await trx.insertInto('organization_members')
          .values({ organization_id: organizationId, user_id: userId, role, created_at: now }).execute()
        return true
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('already_member')
      throw error
    }
  }
}
