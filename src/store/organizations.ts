import type { ExportMembership } from '../../schemas/account-export.js'
import type { Invitation, Member, Organization, OrganizationRole } from '../../schemas/organizations.js'
import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { MEMBER_SEARCH_INDEX } from './search.js'
import { atomically, type Db } from './types.js'
import { holdUserRow } from './users.js'

export type { Invitation, Member, Organization }

const ORGANIZATION_COLUMNS = ['id', 'name', 'slug', 'role', 'created_at', 'updated_at'] as const
const MEMBER_COLUMNS = ['id', 'email', 'name', 'role', 'created_at'] as const
const MEMBERSHIP_COLUMNS = ['id', 'role', 'created_at'] as const

/** Why a member was not changed or removed. */
export type MembershipRefusal = 'no_organization' | 'not_found' | 'last_owner' | 'outranked'

/** A membership changed: the member as they were, and the organization. */
export interface MembershipChange { previous: Member, organization: OrganizationName }

/** At most `max` rows made after `since` (a sliding window ending now). */
export interface WindowLimit { max: number, since: string }

/** A limit reached: when its oldest counted row leaves the window, making room for one more. */
export interface LimitReached { retryAt: string }

/** The limit `counted` (its count and oldest row, within `limit`'s window) reached, or null. */
export function reached (
  counted: { count: number | string, oldest: string | null } | undefined, limit: WindowLimit, now: string
): LimitReached | null {
  if (Number(counted?.count ?? 0) < limit.max) return null
  const window = Date.parse(now) - Date.parse(limit.since)
  return { retryAt: new Date(Date.parse(String(counted?.oldest ?? now)) + window).toISOString() }
}

/** What a change of an organization's members tells of it (the notice to the member). */
export type OrganizationName = Pick<Organization, 'name' | 'slug'>

/**
 * Holds the organization's row for the rest of the transaction (a no-op update): changes of
 * its owners and invitations run one after another, so two demotions at once cannot take away
 * its last two owners. Answers its name, or undefined when it does not exist. A membership
 * change then holds the member's row too, as a refresh does (SessionsRepository.rotate): the
 * refresh that issues tokens for the organization either commits first, and the change finds
 * them to revoke, or reads the changed membership.
 */
export async function holdOrganizationRow (trx: Db, organizationId: string): Promise<OrganizationName | undefined> {
  return await trx.updateTable('organizations').set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', organizationId).returning(['name', 'slug']).executeTakeFirst()
}

async function ownerCount (trx: Db, organizationId: string): Promise<number> {
  const row = await trx.selectFrom('organization_members').select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('organization_id', '=', organizationId).where('role', '=', 'owner').executeTakeFirst()
  return Number(row?.count ?? 0)
}

/** Organizations and their members (docs/api.md, "Organizations"); invitations are src/store/invitations.ts'. */
export class OrganizationsRepository {
  readonly #ofMember
  readonly #all
  readonly #memberships
  readonly #membersFound

  constructor (private readonly db: Db, pages: PageStore) {
    // A user's organizations, through their memberships (organization_members_user_id).
    this.#ofMember = new PageQueries<Organization, { userId: string }>(({ userId }) => db.selectFrom(db
      .selectFrom('organization_members as m').innerJoin('organizations as o', 'o.id', 'm.organization_id')
      .select(['o.id', 'o.name', 'o.slug', 'm.role', 'o.created_at', 'o.updated_at', 'm.user_id as member_id'])
      .as('organizations')).where('member_id', '=', userId), ORGANIZATION_COLUMNS, pages, { searchIn: ['name', 'slug'] })
    // Every organization, with the viewer's role where they are a member: a global administrator's list.
    this.#all = new PageQueries<Organization, { viewerId: string }>(({ viewerId }) => db.selectFrom(db
      .selectFrom('organizations as o')
      .leftJoin('organization_members as m', (join) => join.onRef('m.organization_id', '=', 'o.id').on('m.user_id', '=', viewerId))
      .select(['o.id', 'o.name', 'o.slug', 'm.role', 'o.created_at', 'o.updated_at'])
      .as('organizations')), ORGANIZATION_COLUMNS, pages, { searchIn: ['name', 'slug'] })
    // An organization's members in joining order (organization_members_organization_id_created_at_user_id):
    // the memberships are paged alone, and only the page's users are read (listMembers), so an
    // offset page deep in a large organization reads no user it skips, and a count reads none.
    this.#memberships = new PageQueries<Omit<Member, 'email' | 'name'>, { organizationId: string }>(({ organizationId }) =>
      db.selectFrom(db.selectFrom('organization_members')
        .select(['user_id as id', 'organization_id', 'role', 'created_at']).as('members'))
        .where('organization_id', '=', organizationId), MEMBERSHIP_COLUMNS, pages)
    // A search matches the users' addresses and names, so it reads them with the memberships.
    // PostgreSQL finds the matching users through their trigram indexes (migration 0015), SQLite
    // through users_member_search (migration 0025) when the term is rare; a common one there
    // looks at the first members in order, as a short search does (docs/api.md, "Collections at scale").
    const sqlite = pages.dialect === 'sqlite'
    this.#membersFound = new PageQueries<Member, { organizationId: string }>(({ organizationId }) => db.selectFrom(db
      .selectFrom('organization_members as m').innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['m.user_id as id', 'm.organization_id', 'u.email', 'u.name', 'm.role', 'm.created_at'])
      .as('members')).where('organization_id', '=', organizationId), MEMBER_COLUMNS, pages, {
      searchIn: MEMBER_SEARCH_INDEX.columns,
      ...(sqlite && { searchIndex: MEMBER_SEARCH_INDEX, windowUnindexedSearches: true })
    })
  }

  /**
   * Creates an organization with `ownerId` its first owner, unless they created `limit.max` since
   * `limit.since` (their row held, so that creations at once are counted one after another); a
   * slug in use is StoreConflict 'slug_taken'.
   */
  async create (
    input: { name: string, slug: string },
    ownerId: string,
    now: string,
    limit: WindowLimit,
    db: Db = this.db
  ): Promise<Organization | LimitReached> {
    const organization = { id: uuidv7(), name: input.name, slug: input.slug, created_at: now, updated_at: now }
    try {
      return await atomically(db, async (trx) => {
        await holdUserRow(trx, ownerId)
        const created = await trx.selectFrom('organizations')
          .select((eb) => [eb.fn.countAll<number | string>().as('count'), eb.fn.min('created_at').as('oldest')])
          .where('created_by', '=', ownerId).where('created_at', '>', limit.since).executeTakeFirst()
        const refusal = reached(created, limit, now)
        if (refusal !== null) return refusal
        await trx.insertInto('organizations').values({ ...organization, created_by: ownerId }).execute()
        await trx.insertInto('organization_members')
          .values({ organization_id: organization.id, user_id: ownerId, role: 'owner', created_at: now }).execute()
        return { ...organization, role: 'owner' as const }
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('slug_taken')
      throw error
    }
  }

  /** The organization as `viewerId` sees it (with their role), or undefined. */
  async find (organizationId: string, viewerId: string, db: Db = this.db): Promise<Organization | undefined> {
    return await db.selectFrom('organizations as o')
      .leftJoin('organization_members as m', (join) => join.onRef('m.organization_id', '=', 'o.id').on('m.user_id', '=', viewerId))
      .select(['o.id', 'o.name', 'o.slug', 'm.role', 'o.created_at', 'o.updated_at'])
      .where('o.id', '=', organizationId).executeTakeFirst()
  }

  /** The user's role in the organization: the membership check, by the primary key. */
  async roleOf (organizationId: string, userId: string, db: Db = this.db): Promise<OrganizationRole | undefined> {
    const row = await db.selectFrom('organization_members').select('role')
      .where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst()
    return row?.role
  }

  /**
   * The user's role in the organization, read with the account's row held for the rest of
   * `trx`, before a refresh rotates in it (SessionsRepository.rotate): a membership change holds
   * that row too, so it either committed before and its role is the one read, or waits for the
   * rotation and then finds the new access token to revoke. Undefined for one who is no member.
   */
  async roleForRotation (organizationId: string, userId: string, trx: Db): Promise<OrganizationRole | undefined> {
    return await holdUserRow(trx, userId) ? await this.roleOf(organizationId, userId, trx) : undefined
  }

  /** Renames or re-slugs; undefined when the organization is gone, StoreConflict 'slug_taken' for a slug in use. */
  async update (
    organizationId: string,
    changes: { name?: string, slug?: string },
    viewerId: string,
    now: string,
    db: Db = this.db
  ): Promise<Organization | undefined> {
    try {
      return await atomically(db, async (trx) => {
        const updated = await trx.updateTable('organizations').set({ ...changes, updated_at: now })
          .where('id', '=', organizationId).executeTakeFirst()
        return updated.numUpdatedRows === 0n ? undefined : await this.find(organizationId, viewerId, trx)
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('slug_taken')
      throw error
    }
  }

  /**
   * Deletes the organization with its members and invitations (the foreign keys cascade); its
   * number of members, or undefined.
   */
  async delete (organizationId: string, db: Db = this.db): Promise<number | undefined> {
    return await atomically(db, async (trx) => {
      if (await holdOrganizationRow(trx, organizationId) === undefined) return undefined
      const row = await trx.selectFrom('organization_members').select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('organization_id', '=', organizationId).executeTakeFirst()
      await trx.deleteFrom('organizations').where('id', '=', organizationId).execute()
      return Number(row?.count ?? 0)
    })
  }

  async listOfMember (userId: string, request: CollectionRequest): Promise<CollectionResult<Organization>> {
    return await this.#ofMember.run(request, { userId })
  }

  async listAll (viewerId: string, request: CollectionRequest): Promise<CollectionResult<Organization>> {
    return await this.#all.run(request, { viewerId })
  }

  /**
   * Up to `limit` of the user's memberships with their organizations, latest joined first (an
   * account's export, docs/api.md, "Account export"): the user's memberships through
   * organization_members_user_id, each organization by its key.
   */
  async membershipsOf (userId: string, limit: number): Promise<ExportMembership[]> {
    return await this.db.selectFrom('organization_members as m').innerJoin('organizations as o', 'o.id', 'm.organization_id')
      .select(['m.organization_id', 'o.name', 'o.slug', 'm.role', 'm.created_at as joined_at'])
      .where('m.user_id', '=', userId)
      .orderBy('m.created_at', 'desc').orderBy('m.organization_id', 'desc')
      .limit(limit).execute()
  }

  async listMembers (organizationId: string, request: CollectionRequest): Promise<CollectionResult<Member>> {
    if (request.search !== undefined) return await this.#membersFound.run(request, { organizationId })
    const page = await this.#memberships.run(request, { organizationId })
    const ids = page.items.map((item) => item.id)
    const users = ids.length === 0
      ? []
      : await this.db.selectFrom('users').select(['id', 'email', 'name']).where('id', 'in', ids).execute()
    const byId = new Map(users.map((user) => [user.id, user]))
    // A user deleted between the two reads left the organization with their account.
    const items = page.items.flatMap((item) => {
      const user = byId.get(item.id)
      return user === undefined ? [] : [{ ...item, email: user.email, name: user.name }]
    })
    return { ...page, items }
  }

  /** An organization by its slug (the unique index), or undefined. */
  async findBySlug (slug: string): Promise<{ id: string, name: string, slug: string } | undefined> {
    return await this.db.selectFrom('organizations').select(['id', 'name', 'slug']).where('slug', '=', slug).executeTakeFirst()
  }

  /**
   * The membership an identity provider of the organization vouches for (docs/api.md,
   * "Just-in-time membership"), with the organization's row held: a newcomer joins with `role`;
   * a member gets `role` when `update` says so, except the last owner, who keeps theirs.
   * Answers the role held before (undefined: none) and the one held now; undefined when the
   * organization is gone.
   */
  async vouchedMembership (
    organizationId: string, userId: string, role: OrganizationRole, update: boolean, now: string, trx: Db
  ): Promise<{ previous: OrganizationRole | undefined, role: OrganizationRole } | undefined> {
    if (await holdOrganizationRow(trx, organizationId) === undefined) return undefined
    const previous = await this.roleOf(organizationId, userId, trx)
    if (previous === undefined) {
      await trx.insertInto('organization_members').values({ organization_id: organizationId, user_id: userId, role, created_at: now }).execute()
      return { previous, role }
    }
    if (!update || previous === role || (previous === 'owner' && await ownerCount(trx, organizationId) <= 1)) return { previous, role: previous }
    await trx.updateTable('organization_members').set({ role }).where('organization_id', '=', organizationId).where('user_id', '=', userId).execute()
    return { previous, role }
  }

  async member (organizationId: string, userId: string, db: Db = this.db): Promise<Member | undefined> {
    return await db.selectFrom('organization_members as m').innerJoin('users as u', 'u.id', 'm.user_id')
      .select(['m.user_id as id', 'u.email', 'u.name', 'm.role', 'm.created_at'])
      .where('m.organization_id', '=', organizationId).where('m.user_id', '=', userId).executeTakeFirst()
  }

  /**
   * Gives a member another role, with the organization's row held: `mayChange` decides from
   * the member's current role (rank rules), and the last owner keeps the role. Answers the
   * member as they were, or why nothing changed.
   */
  async changeRole (
    organizationId: string,
    userId: string,
    role: OrganizationRole,
    mayChange: (current: OrganizationRole) => boolean,
    db: Db = this.db
  ): Promise<MembershipChange | MembershipRefusal> {
    return await this.#changeMembership(organizationId, userId, role, mayChange, db)
  }

  /** Removes a member under the same rules as changeRole; answers the member as they were. */
  async removeMember (
    organizationId: string,
    userId: string,
    mayRemove: (current: OrganizationRole) => boolean,
    db: Db = this.db
  ): Promise<MembershipChange | MembershipRefusal> {
    return await this.#changeMembership(organizationId, userId, null, mayRemove, db)
  }

  /** A new role for the member, or (`role` null) their removal. */
  async #changeMembership (
    organizationId: string,
    userId: string,
    role: OrganizationRole | null,
    mayChange: (current: OrganizationRole) => boolean,
    db: Db
  ): Promise<MembershipChange | MembershipRefusal> {
    return await atomically(db, async (trx) => {
      const organization = await holdOrganizationRow(trx, organizationId)
      if (organization === undefined) return 'no_organization'
      if (!await holdUserRow(trx, userId)) return 'not_found'
      const previous = await this.member(organizationId, userId, trx)
      if (previous === undefined) return 'not_found'
      const current = previous.role
      if (!mayChange(current)) return 'outranked'
      if (current === 'owner' && role !== 'owner' && await ownerCount(trx, organizationId) <= 1) return 'last_owner'
      if (role === null) {
        await trx.deleteFrom('organization_members').where('organization_id', '=', organizationId).where('user_id', '=', userId).execute()
      } else {
        await trx.updateTable('organization_members').set({ role })
          .where('organization_id', '=', organizationId).where('user_id', '=', userId).execute()
      }
      return { previous, organization }
    })
  }
}
