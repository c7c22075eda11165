import type { OutboxRepository, OutgoingMessage } from './outbox.js'
import { atomically, type Db, type EmailSignInsTable } from './types.js'

/** A sign-in by e-mail, as the service checks it. */
export interface EmailSignIn { id: string, email: string, userId: string | null, codeHash: string, attempts: number }

/** How long after it expires a request is kept: it still counts toward its address's sends in the hour. */
const KEPT_AFTER_EXPIRY_MS = 60 * 60 * 1000

/** Sign-ins by e-mail (docs/api.md, "Signing in by e-mail"): a code and a link per message, kept as hashes. */
export class EmailSignInsRepository {
  constructor (private readonly db: Db, private readonly outbox: OutboxRepository) {}

  /**
   * Stores the request and the message that carries it together, unless `limit.max` were sent to
   * the address since `limit.since`: false then. Requests long expired go first
   * (email_sign_ins_expires_at).
   */
  async issue (
    request: Omit<EmailSignInsTable, 'attempts' | 'used_at' | 'stage'>,
    message: OutgoingMessage | null,
    limit: { max: number, since: string },
    db: Db = this.db
  ): Promise<boolean> {
    return await atomically(db, async (trx) => {
      const purgeBefore = new Date(Date.parse(request.created_at) - KEPT_AFTER_EXPIRY_MS).toISOString()
      await trx.deleteFrom('email_sign_ins').where('expires_at', '<=', purgeBefore).execute()
      if (await this.countSince(request.email, limit.since, trx) >= limit.max) return false
      if (message === null) return true
      await trx.insertInto('email_sign_ins').values({ ...request, stage: 'sent', attempts: 0, used_at: null }).execute()
      await this.outbox.add(message, request.created_at, trx)
      return true
    })
  }

  /** How many were sent to the address since `since` (email_sign_ins_email_created_at). */
  async countSince (email: string, since: string, db: Db = this.db): Promise<number> {
    const row = await db.selectFrom('email_sign_ins').select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('email', '=', email).where('created_at', '>', since).executeTakeFirst()
    return Number(row?.count ?? 0)
  }

  /** The address's requests whose code may still be given at `now`, newest first (email_sign_ins_email_created_at). */
  async live (email: string, now: string, db: Db = this.db): Promise<EmailSignIn[]> {
    const rows = await db.selectFrom('email_sign_ins').select(['id', 'email', 'user_id', 'code_hash', 'attempts'])
      .where('email', '=', email)
      .where('created_at', '>', new Date(Date.parse(now) - KEPT_AFTER_EXPIRY_MS).toISOString())
      .where('stage', '=', 'sent').where('used_at', 'is', null).where('expires_at', '>', now)
      .orderBy('created_at', 'desc').execute()
    return rows.map((row) => ({
      id: row.id, email: row.email, userId: row.user_id, codeHash: row.code_hash, attempts: row.attempts
    }))
  }

  /** A wrong code given for these requests: each counts it, and is spent at its `max`th. */
  async failedAttempt (ids: string[], max: number, now: string, db: Db = this.db): Promise<void> {
    if (ids.length === 0) return
    await atomically(db, async (trx) => {
      await trx.updateTable('email_sign_ins').set((eb) => ({ attempts: eb('attempts', '+', 1) }))
        .where('id', 'in', ids).where('used_at', 'is', null).execute()
      await trx.updateTable('email_sign_ins').set({ used_at: now })
        .where('id', 'in', ids).where('used_at', 'is', null).where('attempts', '>=', max).execute()
    })
  }

  /** Spends a request by its code: whether this caller did (of two at once, one does). */
  async spend (id: string, now: string, db: Db = this.db): Promise<boolean> {
    const spent = await db.updateTable('email_sign_ins').set({ used_at: now })
      .where('id', '=', id).where('stage', '=', 'sent').where('used_at', 'is', null).where('expires_at', '>', now)
      .executeTakeFirst()
    return spent.numUpdatedRows > 0n
  }

  /** The address a link still unspent at `now` signs in (for the page that asks to confirm it), or undefined. */
  async linkFor (linkHash: string, now: string, db: Db = this.db): Promise<string | undefined> {
    const row = await db.selectFrom('email_sign_ins').select('email')
      .where('link_hash', '=', linkHash).where('stage', '=', 'sent').where('used_at', 'is', null).where('expires_at', '>', now)
      .executeTakeFirst()
    return row?.email
  }

  /**
   * Confirms a link unspent at `now`: its hash becomes the token's the application exchanges,
   * good until `until` (the code of the same message stops working). Where the browser goes
   * next, or undefined when the link is spent, expired or unknown.
   */
  async confirmLink (
    linkHash: string, tokenHash: string, now: string, until: string, db: Db = this.db
  ): Promise<{ redirectTo: string | null } | undefined> {
    const row = await db.updateTable('email_sign_ins').set({ link_hash: tokenHash, stage: 'confirmed', expires_at: until })
      .where('link_hash', '=', linkHash).where('stage', '=', 'sent').where('used_at', 'is', null).where('expires_at', '>', now)
      .returning('redirect_to').executeTakeFirst()
    return row === undefined ? undefined : { redirectTo: row.redirect_to }
  }

  /** Spends the token of a confirmed link: its address and account, or undefined. */
  async spendConfirmed (
    tokenHash: string, now: string, db: Db = this.db
  ): Promise<{ email: string, userId: string | null } | undefined> {
    const row = await db.updateTable('email_sign_ins').set({ used_at: now })
      .where('link_hash', '=', tokenHash).where('stage', '=', 'confirmed').where('used_at', 'is', null).where('expires_at', '>', now)
      .returning(['email', 'user_id']).executeTakeFirst()
    return row === undefined ? undefined : { email: row.email, userId: row.user_id }
  }
}
