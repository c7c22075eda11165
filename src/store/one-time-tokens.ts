import { holdUserRow, normalizeEmail } from './users.js'
import type { OutboxRepository, OutgoingMessage } from './outbox.js'
import { atomically, type Db, type OneTimeTokenPurpose } from './types.js'

/** A user id no account has: what `rehearseIssue` holds and counts for. */
const NO_USER = '00000000-0000-0000-0000-000000000000'

export interface NewOneTimeToken {
  tokenHash: string
  userId: string
  purpose: OneTimeTokenPurpose
  /** The address the token is sent to (and, for verification, the one it verifies). */
  email: string
  expiresAt: string
}

/** Verification and reset tokens, kept only as hashes; each is good once, until it expires. */
export class OneTimeTokensRepository {
  constructor (private readonly db: Db, private readonly outbox: OutboxRepository) {}

  /**
   * Stores the token and the message that carries it together (neither is kept without the
   * other), unless the user was sent `limit.max` tokens of this purpose since `limit.since`:
   * false then. Issues for one user run one after another (the user's row is held), so
   * simultaneous requests cannot pass the limit together.
   */
  async issue (
    token: NewOneTimeToken,
    message: OutgoingMessage,
    now: string,
    limit: { max: number, since: string },
    db: Db = this.db
  ): Promise<boolean> {
    return await atomically(db, async (trx) => {
      if (!await holdUserRow(trx, token.userId)) return false
      if (await this.countSince(token.userId, token.purpose, limit.since, trx) >= limit.max) return false
      await trx.insertInto('one_time_tokens').values({
        token_hash: token.tokenHash,
        user_id: token.userId,
        purpose: token.purpose,
        email: normalizeEmail(token.email),
        created_at: now,
        expires_at: token.expiresAt,
        used_at: null
      }).execute()
      await this.outbox.add(message, now, trx)
      return true
    })
  }

  /**
   * The reads `issue` starts with (the user's row held, the tokens counted), for no account:
   * a request for an address without an account costs about what one with an account does,
   * so its answer time does not tell which it is (docs/api.md, "Resetting a password").
   */
  async rehearseIssue (purpose: OneTimeTokenPurpose, since: string, db: Db = this.db): Promise<void> {
    await atomically(db, async (trx) => {
      await holdUserRow(trx, NO_USER)
      await this.countSince(NO_USER, purpose, since, trx)
    })
  }

  /** How many tokens of `purpose` the user was sent since `since`. */
  async countSince (userId: string, purpose: OneTimeTokenPurpose, since: string, db: Db = this.db): Promise<number> {
    const row = await db.selectFrom('one_time_tokens').select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where('user_id', '=', userId).where('purpose', '=', purpose).where('created_at', '>', since)
      .executeTakeFirst()
    return Number(row?.count ?? 0)
  }

  /**
   * Spends a token of `purpose` that is unused and unexpired at `now`: its user and address,
   * or undefined. One statement, so of two simultaneous uses exactly one succeeds.
   */
  async spend (
    tokenHash: string,
    purpose: OneTimeTokenPurpose,
    now: string,
    db: Db = this.db
  ): Promise<{ userId: string, email: string } | undefined> {
    const row = await db.updateTable('one_time_tokens').set({ used_at: now })
      .where('token_hash', '=', tokenHash).where('purpose', '=', purpose)
      .where('used_at', 'is', null).where('expires_at', '>', now)
      .returning(['user_id', 'email'])
      .executeTakeFirst()
    return row === undefined ? undefined : { userId: row.user_id, email: row.email }
  }

  /** Every unused token of `purpose` the user holds stops working. */
  async spendAll (userId: string, purpose: OneTimeTokenPurpose, now: string, db: Db = this.db): Promise<void> {
    await db.updateTable('one_time_tokens').set({ used_at: now })
      .where('user_id', '=', userId).where('purpose', '=', purpose).where('used_at', 'is', null)
      .execute()
  }
}
