import { sql } from 'kysely'
import type { OutboxRepository, OutgoingMessage } from './outbox.js'
import { atomically, type Db, type Dialect, type EmailSignInsTable } from './types.js'

/** A sign-in by e-mail, as the service checks it. */
export interface EmailSignIn { id: string, email: string, userId: string | null, codeHash: string, attempts: number }

/** How long after it expires a request is kept: it still counts toward its address's sends in the day. */
const KEPT_AFTER_EXPIRY_MS = 24 * 60 * 60 * 1000

/** Sign-ins by e-mail (docs/api.md, "Signing in by e-mail"): a code and a link per message, kept as hashes. */
export class EmailSignInsRepository {
  constructor (private readonly db: Db, private readonly outbox: OutboxRepository, private readonly dialect: Dialect) {}

  /**
   * Stores the request and the message that carries it together, unless the address had as many
   * as a limit allows since its `since`: false then. Requests for one address are stored one
   * after another (on PostgreSQL a lock on the address; SQLite writes one at a time), so that
   * simultaneous ones cannot pass a limit together. Without a message (nobody to send it to) the
   * request is stored all the same, so that the answer takes as long and a code guessed for it
   * is counted as for any. Requests long expired go first (email_sign_ins_expires_at).
   */
  async issue (
    request: Omit<EmailSignInsTable, 'attempts' | 'used_at' | 'token_hash' | 'confirmed_at'>,
    message: OutgoingMessage | null,
    limits: Array<{ max: number, since: string }>,
    db: Db = this.db
  ): Promise<boolean> {
    return await atomically(db, async (trx) => {
      if (this.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`email-sign-in:${request.email}`}))`.execute(trx)
      const purgeBefore = new Date(Date.parse(request.created_at) - KEPT_AFTER_EXPIRY_MS).toISOString()
      await trx.deleteFrom('email_sign_ins').where('expires_at', '<=', purgeBefore).execute()
      for (const { max, since } of limits) {
        if (await this.countSince(request.email, since, trx) >= max) return false
      }
      await trx.insertInto('email_sign_ins').values({ ...request, token_hash: null, confirmed_at: null, attempts: 0, used_at: null }).execute()
      if (message !== null) await this.outbox.add(message, request.created_at, trx)
      return true
    })
  }

  /** How many were sent to the address since `since` (email_sign_ins_email_created_at). */
  async countSince (email: string, since: string, db: Db = this.db): Promise<number> {
    const row = await db.selectFrom('email_sign_ins').select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('email', '=', email).where('created_at', '>', since).executeTakeFirst()
    return Number(row?.count ?? 0)
  }

  /**
   * The address's messages whose code may still be given at `now` (unused and unexpired, their
   * link confirmed or not), newest first (email_sign_ins_email_created_at).
   */
  async live (email: string, now: string, db: Db = this.db): Promise<EmailSignIn[]> {
    const rows = await db.selectFrom('email_sign_ins').select(['id', 'email', 'user_id', 'code_hash', 'attempts'])
      .where('email', '=', email)
      .where('created_at', '>', new Date(Date.parse(now) - KEPT_AFTER_EXPIRY_MS).toISOString())
      .where('used_at', 'is', null).where('expires_at', '>', now)
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

  /** Removes what was kept for an address (its erasure). */
  async forget (email: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('email_sign_ins').where('email', '=', email).execute()
  }

  /** Spends a message by its code: whether this caller did (of two at once, one does). */
  async spend (id: string, now: string, db: Db = this.db): Promise<boolean> {
    const spent = await db.updateTable('email_sign_ins').set({ used_at: now })
      .where('id', '=', id).where('used_at', 'is', null).where('expires_at', '>', now)
      .executeTakeFirst()
    return spent.numUpdatedRows > 0n
  }

  /** The address a link still unspent at `now` signs in (for the page that asks to confirm it), or undefined. */
  async linkFor (linkHash: string, now: string, db: Db = this.db): Promise<string | undefined> {
    const row = await db.selectFrom('email_sign_ins').select('email')
      .where('link_hash', '=', linkHash).where('used_at', 'is', null).where('expires_at', '>', now)
      .executeTakeFirst()
    return row?.email
  }

  /**
   * Confirms the link of a message unused at `now`: it hands the application the token whose hash
   * is `tokenHash`, in place of any it handed before (a link confirmed in a browser that could not
   * use it may be confirmed again in one that can); the message's code still works until either
   * signs in. Where the browser goes next, or undefined when the message is spent, expired or unknown.
   */
  async confirmLink (
    linkHash: string, tokenHash: string, now: string, db: Db = this.db
  ): Promise<{ redirectTo: string | null } | undefined> {
    const row = await db.updateTable('email_sign_ins').set({ token_hash: tokenHash, confirmed_at: now })
      .where('link_hash', '=', linkHash).where('used_at', 'is', null).where('expires_at', '>', now)
      .returning('redirect_to').executeTakeFirst()
    return row === undefined ? undefined : { redirectTo: row.redirect_to }
  }

  /**
   * Spends the message by the token its confirmed link handed the application, if confirmed
   * after `confirmedSince` and still unused and unexpired: its address and account, or undefined.
   */
  async spendConfirmed (
    tokenHash: string, now: string, confirmedSince: string, db: Db = this.db
  ): Promise<{ email: string, userId: string | null } | undefined> {
    const row = await db.updateTable('email_sign_ins').set({ used_at: now })
      .where('token_hash', '=', tokenHash).where('confirmed_at', '>', confirmedSince)
      .where('used_at', 'is', null).where('expires_at', '>', now)
      .returning(['email', 'user_id']).executeTakeFirst()
    return row === undefined ? undefined : { email: row.email, userId: row.user_id }
  }
}
