import type { Redis } from 'ioredis'
import { storedKey } from '../security/stored-key.js'
import type { Db } from '../store/types.js'

export interface PendingAuthorization {
  provider: string
  codeVerifier: string
  /** Sent to OpenID providers; their ID token must carry it back. */
  nonce: string | null
  /** Browser applications: where the callback sends the browser, and their PKCE challenge for the exchange. */
  redirectTo: string | null
  codeChallenge: string | null
}

/** A finished provider sign-in waiting for a browser application's exchange (docs/api.md, "Browser applications"). */
export interface PendingExchange {
  userId: string
  provider: string
  codeChallenge: string
}

/**
 * OAuth state and exchange codes: single use, expiring, server-side (docs/api.md,
 * "Authorize"). Keyed by a hash, so a copy of the store holds nothing a browser could present.
 */
export interface OAuthStateStore {
  put: (state: string, pending: PendingAuthorization, ttlMs: number) => Promise<void>
  /** The pending authorization, removed as it is read; null when unknown, used or expired. */
  take: (state: string) => Promise<PendingAuthorization | null>
  putExchange: (code: string, pending: PendingExchange, ttlMs: number) => Promise<void>
  /** The pending exchange, removed as it is read; null when unknown, used or expired. */
  takeExchange: (code: string) => Promise<PendingExchange | null>
}

export class RedisOAuthStateStore implements OAuthStateStore {
  constructor (private readonly redis: Redis, private readonly prefix = 'users-api:oauth-') {}

  async put (state: string, pending: PendingAuthorization, ttlMs: number): Promise<void> {
    await this.redis.set(`${this.prefix}state:${storedKey(state)}`, JSON.stringify(pending), 'PX', ttlMs)
  }

  async take (state: string): Promise<PendingAuthorization | null> {
    const value = await this.redis.getdel(`${this.prefix}state:${storedKey(state)}`)
    return value === null ? null : JSON.parse(value) as PendingAuthorization
  }

  async putExchange (code: string, pending: PendingExchange, ttlMs: number): Promise<void> {
    await this.redis.set(`${this.prefix}exchange:${storedKey(code)}`, JSON.stringify(pending), 'PX', ttlMs)
  }

  async takeExchange (code: string): Promise<PendingExchange | null> {
    const value = await this.redis.getdel(`${this.prefix}exchange:${storedKey(code)}`)
    return value === null ? null : JSON.parse(value) as PendingExchange
  }
}

export class DatabaseOAuthStateStore implements OAuthStateStore {
  constructor (private readonly db: Db) {}

  async put (state: string, pending: PendingAuthorization, ttlMs: number): Promise<void> {
    const now = Date.now()
    await this.db.deleteFrom('oauth_states').where('expires_at', '<=', new Date(now).toISOString()).execute()
    await this.db.insertInto('oauth_states').values({
      state_hash: storedKey(state),
      provider: pending.provider,
      code_verifier: pending.codeVerifier,
      nonce: pending.nonce,
      redirect_to: pending.redirectTo,
      code_challenge: pending.codeChallenge,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString()
    }).execute()
  }

  async take (state: string): Promise<PendingAuthorization | null> {
    // Delete-and-return: of two callbacks with one state, exactly one gets it.
    const row = await this.db.deleteFrom('oauth_states').where('state_hash', '=', storedKey(state))
      .returning(['provider', 'code_verifier', 'nonce', 'redirect_to', 'code_challenge', 'expires_at']).executeTakeFirst()
    if (row === undefined || row.expires_at <= new Date().toISOString()) return null
    return { provider: row.provider, codeVerifier: row.code_verifier, nonce: row.nonce, redirectTo: row.redirect_to, codeChallenge: row.code_challenge }
  }

  async putExchange (code: string, pending: PendingExchange, ttlMs: number): Promise<void> {
    const now = Date.now()
    await this.db.deleteFrom('oauth_exchange_codes').where('expires_at', '<=', new Date(now).toISOString()).execute()
    await this.db.insertInto('oauth_exchange_codes').values({
      code_hash: storedKey(code),
      user_id: pending.userId,
      provider: pending.provider,
      code_challenge: pending.codeChallenge,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString()
    }).execute()
  }

  async takeExchange (code: string): Promise<PendingExchange | null> {
    const row = await this.db.deleteFrom('oauth_exchange_codes').where('code_hash', '=', storedKey(code))
      .returning(['user_id', 'provider', 'code_challenge', 'expires_at']).executeTakeFirst()
    if (row === undefined || row.expires_at <= new Date().toISOString()) return null
    return { userId: row.user_id, provider: row.provider, codeChallenge: row.code_challenge }
  }
}
