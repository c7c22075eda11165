import type { ExpressionBuilder } from 'kysely'
import { countUpTo } from './bounded-count.js'
import { uuidv7 } from './ids.js'
import type { DatabaseSchema, Db, OutboxTable } from './types.js'

/** A message to deliver: an e-mail (subject, text and HTML) or an SMS (the text only). */
export interface OutgoingMessage {
  channel: OutboxTable['channel']
  recipient: string
  subject: string
  text: string
  html: string | null
}

export interface QueuedMessage extends OutgoingMessage {
  id: string
  attempts: number
  createdAt: string
}

/**
 * Messages waiting for delivery. A message is stored before the request that caused it is
 * answered, and leaves the table once delivered (its body may hold a one-time token).
 */
export class OutboxRepository {
  constructor (private readonly db: Db) {}

  /** Stores a message, due at `dueAt` (at once by default). */
  async add (message: OutgoingMessage, now: string, db: Db = this.db, dueAt = now): Promise<void> {
    await db.insertInto('outbox').values({
      id: uuidv7(),
      channel: message.channel,
      recipient: message.recipient,
      subject: message.subject,
      text_body: message.text,
      html_body: message.html,
      created_at: now,
      attempts: 0,
      next_attempt_at: dueAt,
      claimed_until: null,
      last_error: null
    }).execute()
  }

  /**
   * Claims up to `limit` messages due at `now` until `claimedUntil`, for this caller alone: a
   * message claimed by another instance (its claim not yet lapsed) is skipped, and the claim is
   * checked again on the row itself, so two instances claiming at once never both get it.
   */
  async claimDue (now: string, claimedUntil: string, limit: number): Promise<QueuedMessage[]> {
    const unclaimed = (eb: ExpressionBuilder<DatabaseSchema, 'outbox'>) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)])
    const rows = await this.db.updateTable('outbox')
      .set({ claimed_until: claimedUntil })
      .where('id', 'in', (eb) => eb.selectFrom('outbox').select('id')
        .where('next_attempt_at', '<=', now).where(unclaimed)
        .orderBy('next_attempt_at').orderBy('id').limit(limit))
      .where(unclaimed)
      .returning(['id', 'channel', 'recipient', 'subject', 'text_body', 'html_body', 'attempts', 'created_at'])
      .execute()
    return rows.map((row) => ({
      id: row.id,
      channel: row.channel,
      recipient: row.recipient,
      subject: row.subject,
      text: row.text_body,
      html: row.html_body,
      attempts: Number(row.attempts),
      createdAt: row.created_at
    }))
  }

  /**
   * The messages due by `now` and not delivered yet (counted up to `cap`), and when the earliest
   * of them fell due: what the outbox is behind by.
   */
  async overdue (now: string, cap: number): Promise<{ count: number, dueSince: string | null }> {
    const due = this.db.selectFrom('outbox').where('next_attempt_at', '<=', now)
    const [count, earliest] = await Promise.all([
      countUpTo(this.db, due.select('next_attempt_at'), cap),
      due.select((eb) => eb.fn.min('next_attempt_at').as('due_since')).executeTakeFirst()
    ])
    return { count, dueSince: earliest?.due_since ?? null }
  }

  /** A delivered (or abandoned) message leaves. */
  async remove (id: string): Promise<void> {
    await this.db.deleteFrom('outbox').where('id', '=', id).execute()
  }

  /** A failed delivery: tried again at `nextAttemptAt`, by whichever instance claims it then. */
  async reschedule (id: string, attempts: number, nextAttemptAt: string, error: string): Promise<void> {
    await this.db.updateTable('outbox')
      .set({ attempts, next_attempt_at: nextAttemptAt, claimed_until: null, last_error: error.slice(0, 1000) })
      .where('id', '=', id).execute()
  }
}
