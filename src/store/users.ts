import { sql } from 'kysely'
import { ROLES, type Role } from '../../schemas/rbac.js'
import type { User } from '../../schemas/user.js'
import type { Suspension } from '../../schemas/suspension.js'
import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { prepare, type ReadRows } from './prepared.js'
import { SEARCH_INDEXES } from './search.js'
import { type Db, atomically } from './types.js'

const PUBLIC_COLUMNS = ['id', 'email', 'email_verified', 'name', 'created_at'] as const

/** The caller as protected routes see it: current roles, read fresh on every request. */
export interface UserPrincipal {
  id: string
  roles: Role[]
  /** TOTP is on: with a passkey, a factor that meets MFA_REQUIRED_ROLES. */
  mfaEnabled: boolean
  /** The user has a passkey: the other factor that meets MFA_REQUIRED_ROLES. */
  hasPasskey: boolean
  /** Second factors sent by message that are on. */
  messageFactors: MessageFactor[]
  emailVerified: boolean
  /** The address was proved at least once (docs/security.md, "Account claiming"). */
  claimed: boolean
  /** Raised by a new password or a claim: an MFA challenge of an older version is refused. */
  credentialsVersion: number
  /** The last suspension, in force or past (null when none or lifted): when it began and ends (null: when lifted). */
  suspension: { at: string, until: string | null } | null
}

/** What a claim removed from an account that was attached before its address was proved. */
export interface ReleasedAttachments {
  identities: number
  passkeys: number
  totp: boolean
  messageFactors: MessageFactor[]
  trustedDevices: number
  password: boolean
}

export type MessageFactor = 'email' | 'sms'

export interface NewUser {
  email: string
  name: string
  passwordHash: string | null
  roles: Role[]
  /** Known to be the holder's (given by a provider that verified it, or by the operator). */
  emailVerified: boolean
}

export interface UserUpdate {
  email?: string
  name?: string
  passwordHash?: string
  phone?: string | null
}

/** A row's 0 or 1 as the boolean a User carries. */
function toUser<Row extends { email_verified: number | boolean }> (row: Row): Omit<Row, 'email_verified'> & { email_verified: boolean } {
  return { ...row, email_verified: Boolean(row.email_verified) }
}

/** E-mail addresses are unique case-insensitively: stored and looked up in lower case. */
export function normalizeEmail (email: string): string {
  return email.trim().toLowerCase()
}

/** The roles among a user's role rows (null where a left join found none). */
export function toRoles (values: Array<string | null>): Role[] {
  return values.filter((value): value is Role => (ROLES as readonly string[]).includes(value ?? ''))
}

/**
 * Holds the user's row until the transaction ends (a no-op update: SQLite has no FOR UPDATE),
 * so that transactions counting something of that user run one after another. True when the
 * user exists. The column set is one no key or index holds: setting the key, even to itself,
 * makes SQLite check every row that refers to the user, which grows with their sessions.
 */
export async function holdUserRow (trx: Db, userId: string): Promise<boolean> {
  const held = await userRowHold(trx, userId).executeTakeFirst()
  return held.numUpdatedRows > 0n
}

/** holdUserRow's statement, also compiled once where a hot path holds the row (session-rotation.ts). */
export function userRowHold (db: Db, userId: string) {
  return db.updateTable('users').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', userId)
}

/**
 * Whether the user could still sign in without their passkeys or without their linked
 * identities (`kind`, the last of which is about to go): by password, or by the other kind.
 * Asked with the user's row held, so that two removals at once cannot take the last two.
 */
export async function canSignInWithout (trx: Db, userId: string, kind: 'passkeys' | 'user_identities'): Promise<boolean> {
  const user = await trx.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst()
  if ((user?.password_hash ?? null) !== null) return true
  const other = kind === 'passkeys' ? 'user_identities' : 'passkeys'
  return await trx.selectFrom(other).select('user_id').where('user_id', '=', userId).executeTakeFirst() !== undefined
}

/**
 * How long a principal read for authentication may be reused. Changes made through this
 * instance invalidate it at once; other instances see them within this time.
 */
export const PRINCIPAL_TTL_MS = 1000

export class UsersRepository {
  readonly #principals = new Map<string, { principal: UserPrincipal | undefined, until: number }>()
  readonly #selectById
  readonly #selectPrincipal
  readonly #selectCredentials
  readonly #pages

  constructor (private readonly db: Db, readRows: ReadRows, pages: PageStore) {
    this.#selectById = prepare(readRows, db.selectFrom('users').select(PUBLIC_COLUMNS).where('id', '=', ''))
    this.#selectPrincipal = prepare(readRows, db.selectFrom('users')
      .leftJoin('user_roles', 'user_roles.user_id', 'users.id')
      .select(['users.id', 'users.totp_enabled_at', 'users.mfa_email_enabled_at', 'users.mfa_sms_enabled_at', 'users.email_verified', 'users.claimed_at', 'users.credentials_version', 'users.suspended_at', 'users.suspended_until', 'user_roles.role'])
      .select((eb) => eb.exists(eb.selectFrom('passkeys').select('passkeys.id').whereRef('passkeys.user_id', '=', 'users.id')).as('has_passkey'))
      .where('users.id', '=', ''))
    this.#selectCredentials = prepare(readRows, db.selectFrom('users').select([...PUBLIC_COLUMNS, 'password_hash']).where('email', '=', ''))
    this.#pages = new PageQueries<User, Record<string, never>>(() => db.selectFrom('users'), PUBLIC_COLUMNS, pages, {
      searchIn: SEARCH_INDEXES.users.columns,
      searchIndex: SEARCH_INDEXES.users,
      maintainedCount: () => 'users'
    })
  }

  /**
   * The principal for authentication, from a short-lived cache (one query per user per TTL):
   * at once when cached, so that authentication costs no promise then.
   */
  cachedPrincipal (id: string): UserPrincipal | undefined | Promise<UserPrincipal | undefined> {
    const now = Date.now()
    const cached = this.#principals.get(id)
    if (cached !== undefined && cached.until > now) return cached.principal
    return this.#loadPrincipal(id, now)
  }

  async #loadPrincipal (id: string, now: number): Promise<UserPrincipal | undefined> {
    const principal = await this.findPrincipal(id)
    if (this.#principals.size >= 10_000) this.#principals.clear()
    this.#principals.set(id, { principal, until: now + PRINCIPAL_TTL_MS })
    return principal
  }

  /** Drops a cached principal after a change to the user's roles, MFA or existence. */
  invalidate (id: string): void {
    this.#principals.delete(id)
  }

  /** Inserts the user and its roles atomically; a taken e-mail is StoreConflict 'email_taken'. */
  async create (user: NewUser, db: Db = this.db): Promise<User> {
    const now = new Date().toISOString()
    const row = {
      id: uuidv7(),
      email: normalizeEmail(user.email),
      name: user.name,
      password_hash: user.passwordHash,
      totp_enabled_at: null,
      email_verified: user.emailVerified ? 1 : 0,
      claimed_at: user.emailVerified ? now : null,
      created_at: now,
      updated_at: now
    }
    try {
      await atomically(db, async (trx) => {
        await trx.insertInto('users').values(row).execute()
        if (user.roles.length > 0) {
          await trx.insertInto('user_roles')
            .values(user.roles.map((role) => ({ user_id: row.id, role, created_at: now })))
            .execute()
        }
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('email_taken')
      throw error
    }
    return {
      id: row.id, email: row.email, email_verified: user.emailVerified, name: row.name, created_at: row.created_at
    }
  }

  async findById (id: string): Promise<User | undefined> {
    const row = (await this.#selectById(id))[0]
    return row === undefined ? undefined : toUser(row)
  }

  async findByEmail (email: string): Promise<(User & { password_hash: string | null }) | undefined> {
    const row = (await this.#selectCredentials(normalizeEmail(email)))[0]
    return row === undefined ? undefined : toUser(row)
  }

  /** The number for SMS codes, null when none is set; undefined when the user does not exist. */
  async findPhone (id: string): Promise<string | null | undefined> {
    const row = await this.db.selectFrom('users').select('phone').where('id', '=', id).executeTakeFirst()
    return row?.phone
  }

  async findPasswordHash (id: string): Promise<string | null | undefined> {
    const row = await this.db.selectFrom('users').select('password_hash').where('id', '=', id).executeTakeFirst()
    return row?.password_hash
  }

  /** One indexed query: the user's existence, roles, MFA state and whether they have a passkey. */
  async findPrincipal (id: string): Promise<UserPrincipal | undefined> {
    const rows = await this.#selectPrincipal(id)
    const first = rows[0]
    if (first === undefined) return undefined
    return {
      id: first.id,
      roles: toRoles(rows.map((row) => row.role)),
      mfaEnabled: first.totp_enabled_at !== null,
      hasPasskey: Boolean(first.has_passkey),
      messageFactors: [...(first.mfa_email_enabled_at !== null ? ['email' as const] : []), ...(first.mfa_sms_enabled_at !== null ? ['sms' as const] : [])],
      emailVerified: Boolean(first.email_verified),
      claimed: first.claimed_at !== null,
      credentialsVersion: Number(first.credentials_version),
      suspension: first.suspended_at === null ? null : { at: first.suspended_at, until: first.suspended_until }
    }
  }

  /** Suspends the user (replacing a suspension in force); undefined when there is no such user. */
  async suspend (
    id: string, suspension: { reason: string, until: string | null, by: string }, now: string, db: Db = this.db
  ): Promise<Suspension | undefined> {
    const row = await db.updateTable('users')
      .set({
        suspended_at: now,
        suspended_until: suspension.until,
        suspension_reason: suspension.reason,
        suspended_by: suspension.by
      })
      .where('id', '=', id).returning('id').executeTakeFirst()
    // API keys are not revoked with the sessions: they read the suspension from the principal.
    this.invalidate(id)
    if (row === undefined) return undefined
    const { reason, until, by } = suspension
    return { user_id: id, reason, suspended_at: now, until, suspended_by: by }
  }

  /** Lifts the user's suspension, in force or past; false when there was none. */
  async liftSuspension (id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.updateTable('users')
      // A deletion scheduled by the holder (a suspension until it is due) is cancelled with it.
      .set({
        suspended_at: null, suspended_until: null, suspension_reason: null, suspended_by: null, deletion_due_at: null
      })
      .where('id', '=', id).where('suspended_at', 'is not', null).executeTakeFirst()
    this.invalidate(id)
    return Number(result.numUpdatedRows) > 0
  }

  /**
   * Applies the changes; undefined when the user does not exist. A new e-mail address is
   * unverified; a new phone number turns SMS codes off (they were proved to go to the old one).
   */
  async update (id: string, changes: UserUpdate, db: Db = this.db): Promise<User | undefined> {
    const values = {
      ...(changes.email !== undefined && {
        email: normalizeEmail(changes.email), email_verified: 0, mfa_email_enabled_at: null
      }),
      ...(changes.name !== undefined && { name: changes.name }),
      // A new password ends the MFA challenges the old one opened.
      ...(changes.passwordHash !== undefined && { password_hash: changes.passwordHash, credentials_version: sql<number>`credentials_version + 1` }),
      ...(changes.phone !== undefined && { phone: changes.phone, mfa_sms_enabled_at: null }),
      updated_at: new Date().toISOString()
    }
    try {
      const row = await db.updateTable('users').set(values).where('id', '=', id).returning(PUBLIC_COLUMNS).executeTakeFirst()
      this.invalidate(id)
      return row === undefined ? undefined : toUser(row)
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('email_taken')
      throw error
    }
  }

  /**
   * Marks `email` verified, when it is still the user's address: the user, and whether this
   * is the first proof of an address (the account is claimed now); undefined when it is not
   * the user's address.
   */
  async markEmailVerified (
    id: string,
    email: string,
    db: Db = this.db
  ): Promise<(User & { claimedNow: boolean }) | undefined> {
    return await atomically(db, async (trx) => {
      const before = await trx.selectFrom('users').select('claimed_at').where('id', '=', id).executeTakeFirst()
      const now = new Date().toISOString()
      const row = await trx.updateTable('users').set({ email_verified: 1, claimed_at: before?.claimed_at ?? now, updated_at: now })
        .where('id', '=', id).where('email', '=', normalizeEmail(email)).returning(PUBLIC_COLUMNS).executeTakeFirst()
      this.invalidate(id)
      return row === undefined ? undefined : { ...toUser(row), claimedNow: before?.claimed_at === null }
    })
  }

  /**
   * Removes what was attached to an account before its address was first proved (docs/security.md,
   * "Account claiming"): linked identities (but `keepIdentity`, the provider identity that proved
   * it), passkeys, TOTP and backup codes, codes by message and the phone number, trusted devices,
   * codes sent by message, and, with `password`, the password. Raises the credentials version,
   * which ends pending MFA challenges. Sessions are ended by the caller, in the same transaction.
   */
  async releaseForClaim (
    id: string,
    options: { keepIdentity?: { provider: string, subject: string }, password: boolean },
    db: Db = this.db
  ): Promise<ReleasedAttachments> {
    return await atomically(db, async (trx) => {
      const user = await trx.selectFrom('users').select(['totp_enabled_at', 'mfa_email_enabled_at', 'mfa_sms_enabled_at', 'password_hash']).where('id', '=', id).executeTakeFirst()
      let identities = trx.deleteFrom('user_identities').where('user_id', '=', id)
      const keep = options.keepIdentity
      if (keep !== undefined) identities = identities.where((eb) => eb.not(eb.and([eb('provider', '=', keep.provider), eb('subject', '=', keep.subject)])))
      const removed = {
        identities: Number((await identities.executeTakeFirst()).numDeletedRows),
        passkeys: Number((await trx.deleteFrom('passkeys').where('user_id', '=', id).executeTakeFirst()).numDeletedRows),
        trustedDevices: Number((await trx.deleteFrom('trusted_devices').where('user_id', '=', id).executeTakeFirst()).numDeletedRows)
      }
      await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', id).execute()
      await trx.deleteFrom('mfa_message_codes').where('user_id', '=', id).execute()
      await trx.updateTable('users').set({
        totp_secret: null,
        totp_pending_secret: null,
        totp_enabled_at: null,
        totp_last_step: null,
        mfa_email_enabled_at: null,
        mfa_sms_enabled_at: null,
        phone: null,
        ...(options.password && { password_hash: null }),
        credentials_version: sql<number>`credentials_version + 1`
      }).where('id', '=', id).execute()
      this.invalidate(id)
      return {
        ...removed,
        totp: (user?.totp_enabled_at ?? null) !== null,
        messageFactors: [...((user?.mfa_email_enabled_at ?? null) !== null ? ['email' as const] : []), ...((user?.mfa_sms_enabled_at ?? null) !== null ? ['sms' as const] : [])],
        password: options.password && (user?.password_hash ?? null) !== null
      }
    })
  }

  /** Turns a second factor sent by message on (an instant) or off (null). */
  async setMessageFactor (
    id: string,
    factor: MessageFactor,
    enabledAt: string | null,
    db: Db = this.db
  ): Promise<void> {
    await db.updateTable('users').set(factor === 'email' ? { mfa_email_enabled_at: enabledAt } : { mfa_sms_enabled_at: enabledAt })
      .where('id', '=', id).execute()
    this.invalidate(id)
  }

  /** Removes the user with its roles and refresh tokens (foreign keys cascade). */
  async delete (id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst()
    this.invalidate(id)
    return result.numDeletedRows > 0n
  }

  /** Adds a role; adding one already held changes nothing. */
  async addRole (userId: string, role: Role, db: Db = this.db): Promise<void> {
    await db.insertInto('user_roles')
      .values({ user_id: userId, role, created_at: new Date().toISOString() })
      .onConflict((conflict) => conflict.columns(['user_id', 'role']).doNothing())
      .execute()
    this.invalidate(userId)
  }

  /** Removes a role; removing one not held changes nothing. */
  async removeRole (userId: string, role: Role, db: Db = this.db): Promise<void> {
    await db.deleteFrom('user_roles').where('user_id', '=', userId).where('role', '=', role).execute()
    this.invalidate(userId)
  }

  async list (request: CollectionRequest): Promise<CollectionResult<User>> {
    return await this.#pages.run(request, {})
  }
}
