import type { Redis } from 'ioredis'
import { storedKey } from '../security/stored-key.js'
import type { Db } from '../store/types.js'

/** A ceremony's challenge, and the user whose passkey must answer it (null: any user's, for a sign-in without an e-mail of an account). */
export interface PendingChallenge { challenge: string, userId: string | null }

/**
 * Passkey ceremony challenges: single use, expiring, server-side (docs/api.md, "Passkeys"),
 * shared by every instance. Keyed by a hash of the key.
 */
export interface PasskeyChallengeStore {
  put: (key: string, pending: PendingChallenge, ttlMs: number) => Promise<void>
  /** The pending challenge, removed as it is read; null when unknown, used or expired. */
  take: (key: string) => Promise<PendingChallenge | null>
}

export class RedisPasskeyChallengeStore implements PasskeyChallengeStore {
  constructor (private readonly redis: Redis, private readonly prefix = 'users-api:passkey-challenge:') {}

  async put (key: string, pending: PendingChallenge, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + storedKey(key), JSON.stringify(pending), 'PX', ttlMs)
  }

  async take (key: string): Promise<PendingChallenge | null> {
    const value = await this.redis.getdel(this.prefix + storedKey(key))
    return value === null ? null : JSON.parse(value) as PendingChallenge
  }
}

export class DatabasePasskeyChallengeStore implements PasskeyChallengeStore {
  constructor (private readonly db: Db) {}

  async put (key: string, pending: PendingChallenge, ttlMs: number): Promise<void> {
    const now = Date.now()
    await this.db.deleteFrom('passkey_challenges').where('expires_at', '<=', new Date(now).toISOString()).execute()
    await this.db.insertInto('passkey_challenges').values({
      key_hash: storedKey(key),
      user_id: pending.userId,
      challenge: pending.challenge,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString()
    }).execute()
  }

  async take (key: string): Promise<PendingChallenge | null> {
    // Delete-and-return: of two ceremonies with one challenge, exactly one gets it.
    const row = await this.db.deleteFrom('passkey_challenges').where('key_hash', '=', storedKey(key))
      .returning(['user_id', 'challenge', 'expires_at']).executeTakeFirst()
    if (row === undefined || row.expires_at <= new Date().toISOString()) return null
    return { challenge: row.challenge, userId: row.user_id }
  }
}
