import type { Db } from './types.js'

export interface RevokedToken { jti: string, expires_at: string }

/** The durable list of revoked access-token identifiers (survives restarts). */
export class RevocationsRepository {
  constructor (private readonly db: Db) {}

  async add (jti: string, expiresAt: string, now: string): Promise<void> {
    await this.db.insertInto('revoked_tokens')
      .values({ jti, expires_at: expiresAt, created_at: now })
      .onConflict((conflict) => conflict.column('jti').doNothing())
      .execute()
  }

  /**
   * Adds the identifier unless it is there already: true for the one caller that added it,
   * which makes single-use tokens (the MFA challenge) single use across instances.
   */
  async claim (jti: string, expiresAt: string, now: string, db: Db = this.db): Promise<boolean> {
    const inserted = await db.insertInto('revoked_tokens')
      .values({ jti, expires_at: expiresAt, created_at: now })
      .onConflict((conflict) => conflict.column('jti').doNothing())
      .returning('jti')
      .executeTakeFirst()
    return inserted !== undefined
  }

  /** Entries revoked at or after `since`, expired ones included (see recentRevocations). */
  async since (since: string): Promise<RevokedToken[]> {
    return await recentRevocations(this.db, since).execute()
  }

  /** Entries whose token has expired: the token fails verification anyway. */
  async purgeExpired (now: string): Promise<void> {
    await this.db.deleteFrom('revoked_tokens').where('expires_at', '<=', now).execute()
  }
}

/**
 * The poll's read, on the created_at index: only what was revoked since the last poll. With
 * `expires_at > now` added, both databases chose the expires_at index and read every unexpired
 * entry on each poll (thousands under a stream of sign-ins, milliseconds of the event loop
 * twice a second), so expired entries are skipped in memory instead (RevocationList.add).
 * Exported for the test of its plan.
 */
export function recentRevocations (db: Db, since: string) {
  return db.selectFrom('revoked_tokens').select(['jti', 'expires_at']).where('created_at', '>=', since)
}
