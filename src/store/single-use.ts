import type { Redis } from 'ioredis'
import { sql } from 'kysely'
import { storedKey } from '../security/stored-key.js'
import { isUniqueViolation } from './errors.js'
import type { Db } from './types.js'

/** An OAuth sign-in between its authorize step and its callback. */
export interface PendingAuthorization {
  provider: string
  codeVerifier: string
  /**
   * Sent to OpenID providers; their ID token must carry it back. For a SAML connection, the
   * AuthnRequest's ID, which the response's InResponseTo must carry back.
   */
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
 * A passkey ceremony's challenge, and the user whose passkey must answer
 * it (null: any user's, for a sign-in without an e-mail of an account).
 */
export interface PendingChallenge { challenge: string, userId: string | null }

/**
 * Values that live a few minutes and are used once, keyed by a secret a browser holds (an
 * OAuth state, an exchange code, a passkey challenge): shared by every instance, and keyed by
 * the secret's hash, so a copy of the store holds nothing a browser could present.
 */
export interface SingleUseStore<Value> {
  put: (secret: string, value: Value, ttlMs: number) => Promise<void>
  /** The value, removed as it is read; null when unknown, used or expired. */
  take: (secret: string) => Promise<Value | null>
}

/** Keys seen once until they expire (SAML assertion IDs): of two uses of one key, only the first is told it is. */
export interface FirstUses {
  firstUse: (key: string, ttlMs: number) => Promise<boolean>
}

export interface SingleUseStores {
  oauthStates: SingleUseStore<PendingAuthorization>
  oauthExchanges: SingleUseStore<PendingExchange>
  passkeyChallenges: SingleUseStore<PendingChallenge>
  assertionIds: FirstUses
}

/** In Redis: SET NX with an expiry, which only the first setter wins. */
class RedisFirstUses implements FirstUses {
  constructor (private readonly redis: Redis, private readonly prefix: string) {}

  async firstUse (key: string, ttlMs: number): Promise<boolean> {
    return await this.redis.set(this.prefix + storedKey(key), '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX') === 'OK'
  }
}

/** In a table: expired keys are deleted first (by their index), then inserting a key seen already fails. */
class DatabaseFirstUses implements FirstUses {
  constructor (private readonly db: Db) {}

  async firstUse (key: string, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    const keyHash = storedKey(key)
    await this.db.deleteFrom('sso_assertion_ids').where('expires_at', '<=', new Date(now).toISOString()).execute()
    try {
      await this.db.insertInto('sso_assertion_ids').values({ key_hash: keyHash, expires_at: new Date(now + ttlMs).toISOString() }).execute()
      return true
    } catch (error) {
      if (isUniqueViolation(error)) return false
      throw error
    }
  }
}

/** In Redis: SET with an expiry, then GETDEL, which of two readers only one wins. */
class RedisSingleUseStore<Value> implements SingleUseStore<Value> {
  constructor (private readonly redis: Redis, private readonly prefix: string) {}

  async put (secret: string, value: Value, ttlMs: number): Promise<void> {
    await this.redis.set(this.prefix + storedKey(secret), JSON.stringify(value), 'PX', ttlMs)
  }

  async take (secret: string): Promise<Value | null> {
    const stored = await this.redis.getdel(this.prefix + storedKey(secret))
    return stored === null ? null : JSON.parse(stored) as Value
  }
}

type SingleUseTable = 'oauth_states' | 'oauth_exchange_codes' | 'passkey_challenges'

/** How one table holds a kind of value: its key column, and the value's own columns. */
interface TableLayout<Value> {
  table: SingleUseTable
  key: string
  toRow: (value: Value) => Record<string, string | null>
  fromRow: (row: Record<string, string | null>) => Value
}

/**
 * In a table: expired rows are deleted before each insert, and a take is a delete returning
 * the row, which of two readers only one wins.
 */
class DatabaseSingleUseStore<Value> implements SingleUseStore<Value> {
  constructor (private readonly db: Db, private readonly layout: TableLayout<Value>) {}

  async put (secret: string, value: Value, ttlMs: number): Promise<void> {
    const { table, key, toRow } = this.layout
    const now = Date.now()
    await this.db.deleteFrom(table).where('expires_at', '<=', new Date(now).toISOString()).execute()
    // The layout's columns are its table's: the three tables' own columns differ.
    await this.db.insertInto(table).values({
      [key]: storedKey(secret),
      ...toRow(value),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + ttlMs).toISOString()
    } as never).execute()
  }

  async take (secret: string): Promise<Value | null> {
    const { table, key, fromRow } = this.layout
    const row = await this.db.deleteFrom(table).where(sql.ref(key), '=', storedKey(secret)).returningAll().executeTakeFirst() as Record<string, string | null> | undefined
    if (row === undefined || (row.expires_at ?? '') <= new Date().toISOString()) return null
    return fromRow(row)
  }
}

const LAYOUTS: {
  [Kind in Exclude<keyof SingleUseStores, 'assertionIds'>]: TableLayout<
    SingleUseStores[Kind] extends SingleUseStore<infer Value> ? Value : never
  >
} = {
  oauthStates: {
    table: 'oauth_states',
    key: 'state_hash',
    toRow: (pending) => ({
      provider: pending.provider,
      code_verifier: pending.codeVerifier,
      nonce: pending.nonce,
      redirect_to: pending.redirectTo,
      code_challenge: pending.codeChallenge
    }),
    fromRow: (row) => ({
      provider: String(row.provider),
      codeVerifier: String(row.code_verifier),
      nonce: row.nonce ?? null,
      redirectTo: row.redirect_to ?? null,
      codeChallenge: row.code_challenge ?? null
    })
  },
  oauthExchanges: {
    table: 'oauth_exchange_codes',
    key: 'code_hash',
    toRow: (pending) => ({
      user_id: pending.userId, provider: pending.provider, code_challenge: pending.codeChallenge
    }),
    fromRow: (row) => ({
      userId: String(row.user_id), provider: String(row.provider), codeChallenge: String(row.code_challenge)
    })
  },
  passkeyChallenges: {
    table: 'passkey_challenges',
    key: 'key_hash',
    toRow: (pending) => ({ user_id: pending.userId, challenge: pending.challenge }),
    fromRow: (row) => ({ challenge: String(row.challenge), userId: row.user_id ?? null })
  }
}

/** The single-use stores: in Redis when the service has it (shared by instances), else in the database. */
export function singleUseStores (db: Db, redis: Redis | null): SingleUseStores {
  if (redis !== null) {
    return {
      oauthStates: new RedisSingleUseStore(redis, 'users-api:oauth-state:'),
      oauthExchanges: new RedisSingleUseStore(redis, 'users-api:oauth-exchange:'),
      passkeyChallenges: new RedisSingleUseStore(redis, 'users-api:passkey-challenge:'),
      assertionIds: new RedisFirstUses(redis, 'users-api:saml-assertion:')
    }
  }
  return {
    oauthStates: new DatabaseSingleUseStore(db, LAYOUTS.oauthStates),
    oauthExchanges: new DatabaseSingleUseStore(db, LAYOUTS.oauthExchanges),
    passkeyChallenges: new DatabaseSingleUseStore(db, LAYOUTS.passkeyChallenges),
    assertionIds: new DatabaseFirstUses(db)
  }
}
