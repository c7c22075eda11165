import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Db } from '../store/types.js'

export interface PendingAuthorization { provider: string, codeVerifier: string }

/** OAuth state: single use, expiring, server-side (docs/api.md, "Authorize"). Keyed by a hash of the state. */
export interface OAuthStateStore {
  put: (state: string, pending: PendingAuthorization, ttlMs: number) => Promise<void>
  /** The pending authorization, removed as it is read; null when unknown, used or expired. */
  take: (state: string) => Promise<PendingAuthorization | null>
}

function key (state: string): string {
  return createHash('sha256').update(state).digest('base64url')
}

export class RedisOAuthStateStore implements OAuthStateStore {
  constructor (private readonly redis: Redis, private readonly prefix = 'users-api:oauth-state:') {}

  async put (state: string, pending: PendingAuthorization, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + key(state), JSON.stringify(pending), 'PX', ttlMs)
  }

  async take (state: string): Promise<PendingAuthorization | null> {
    const value = await this.redis.getdel(this.prefix + key(state))
    return value === null ? null : JSON.parse(value) as PendingAuthorization
  }
}

export class DatabaseOAuthStateStore implements OAuthStateStore {
  constructor (private readonly db: Db) {}

  async put (state: string, pending: PendingAuthorization, ttlMs: number): Promise<void> {
    const now = Date.now()
    await this.db.deleteFrom('oauth_states').where('expires_at', '<=', new Date(now).toISOString()).execute()
    await this.db.insertInto('oauth_states').values({
      state_hash: key(state),
      provider: pending.provider,
      code_verifier: pending.codeVerifier,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString()
    }).execute()
  }

  async take (state: string): Promise<PendingAuthorization | null> {
    // Delete-and-return: of two callbacks with one state, exactly one gets it.
    const row = await this.db.deleteFrom('oauth_states').where('state_hash', '=', key(state))
      .returning(['provider', 'code_verifier', 'expires_at']).executeTakeFirst()
    if (row === undefined || row.expires_at <= new Date().toISOString()) return null
    return { provider: row.provider, codeVerifier: row.code_verifier }
  }
}
