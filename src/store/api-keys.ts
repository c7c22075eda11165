import type { ApiKeyScope } from '../../schemas/api-keys.js'
import type { OrganizationRole } from '../../schemas/organizations.js'
import { holdOrganizationRow } from './organizations.js'
import { holdUserRow } from './users.js'
import { type ApiKeysTable, atomically, type Db } from './types.js'

/** An API key as the services and the authentication hook use it (docs/api.md, "API keys"). */
export interface StoredApiKey {
  id: string
  userId: string | null
  organizationId: string | null
  role: OrganizationRole | null
  name: string
  keyHash: string
  scopes: ApiKeyScope[]
  createdAt: string
  expiresAt: string | null
  lastUsedAt: string | null
}

export type NewApiKey = Omit<StoredApiKey, 'lastUsedAt'> & { createdBy: string | null }

/** Whose keys: a person's or an organization's. */
export type ApiKeyOwner = { userId: string } | { organizationId: string }

/**
 * How long a key read for authentication is reused. A deleted key is refused before then
 * through the revocation list (docs/api.md, "API keys"); its owner's standing is read apart
 * (UsersRepository.cachedPrincipal).
 */
export const API_KEY_TTL_MS = 30_000
/** How long a deleted key's revocation entry must last: every instance's cached copy lapses within it. */
export const DELETED_KEY_REVOCATION_MS = 2 * API_KEY_TTL_MS
/** last_used_at is written at most this often. */
export const LAST_USED_PRECISION_MS = 60_000

function keyOf (row: ApiKeysTable): StoredApiKey {
  return {
    id: row.id,
    userId: row.user_id,
    organizationId: row.organization_id,
    role: row.role,
    name: row.name,
    keyHash: row.key_hash,
    scopes: JSON.parse(row.scopes) as ApiKeyScope[],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastUsedAt: row.last_used_at
  }
}

function ownedBy<Query extends { where: (...args: any[]) => Query }> (query: Query, owner: ApiKeyOwner): Query {
  return 'userId' in owner ? query.where('user_id', '=', owner.userId) : query.where('organization_id', '=', owner.organizationId)
}

export class ApiKeysRepository {
  readonly #cached = new Map<string, { key: StoredApiKey, until: number }>()
  readonly #reading = new Map<string, Promise<StoredApiKey | undefined>>()

  constructor (private readonly db: Db) {}

  /** Adds the key unless its owner is gone or already holds `max` (counted with the owner's row held). */
  async create (key: NewApiKey, max: number, db: Db = this.db): Promise<StoredApiKey | 'no_organization' | { max: number }> {
    const owner: ApiKeyOwner = key.organizationId !== null
      ? { organizationId: key.organizationId }
      : { userId: key.userId as string }
    return await atomically(db, async (trx) => {
      if ('organizationId' in owner) {
        if (await holdOrganizationRow(trx, owner.organizationId) === undefined) return 'no_organization'
      } else {
        await holdUserRow(trx, owner.userId)
      }
      const held = await ownedBy(trx.selectFrom('api_keys').select((eb) => eb.fn.countAll<number | string>().as('count')), owner)
        .executeTakeFirst()
      if (Number(held?.count ?? 0) >= max) return { max }
      const row: ApiKeysTable = {
        id: key.id,
        user_id: key.userId,
        organization_id: key.organizationId,
        role: key.role,
        name: key.name,
        key_hash: key.keyHash,
        scopes: JSON.stringify(key.scopes),
        created_by: key.createdBy,
        created_at: key.createdAt,
        expires_at: key.expiresAt,
        last_used_at: null
      }
      await trx.insertInto('api_keys').values(row).execute()
      return keyOf(row)
    })
  }

  /** The owner's keys, oldest first (api_keys_user_id_created_at, api_keys_organization_id_created_at). */
  async listOf (owner: ApiKeyOwner): Promise<StoredApiKey[]> {
    const rows = await ownedBy(this.db.selectFrom('api_keys').selectAll(), owner).orderBy('created_at').orderBy('id').execute()
    return rows.map(keyOf)
  }

  /** Deletes every key of the person, or of the organization: their ids. */
  async deleteOwnedBy (owner: ApiKeyOwner, db: Db = this.db): Promise<string[]> {
    // Held first: a key being made for the organization is then either seen here or not made.
    if ('organizationId' in owner) await holdOrganizationRow(db, owner.organizationId)
    const deleted = await ownedBy(db.deleteFrom('api_keys'), owner).returning('id').execute()
    for (const { id } of deleted) this.#cached.delete(id)
    return deleted.map(({ id }) => id)
  }

  /** Deletes the owner's key: whether there was one. */
  async delete (owner: ApiKeyOwner, id: string, db: Db = this.db): Promise<boolean> {
    const deleted = await ownedBy(db.deleteFrom('api_keys').where('id', '=', id), owner).executeTakeFirst()
    this.#cached.delete(id)
    return Number(deleted.numDeletedRows) > 0
  }

  /**
   * The key for authentication: from memory when read within API_KEY_TTL_MS (see there). Requests
   * that arrive while it is read wait for that read: one copy, so its use is recorded once. Only
   * keys found are kept (made-up ids with a good checksum cost a read each, and push no real key
   * out); when full, the oldest makes room.
   */
  cachedKey (id: string): StoredApiKey | undefined | Promise<StoredApiKey | undefined> {
    const now = Date.now()
    const cached = this.#cached.get(id)
    if (cached !== undefined && cached.until > now) return cached.key
    const pending = this.#reading.get(id)
    if (pending !== undefined) return pending
    const reading = this.#read(id).then((key) => {
      this.#reading.delete(id)
      this.#cached.delete(id)
      if (key !== undefined) {
        if (this.#cached.size >= 10_000) this.#cached.delete(this.#cached.keys().next().value as string)
        this.#cached.set(id, { key, until: now + API_KEY_TTL_MS })
      }
      return key
    }, (error: unknown) => {
      this.#reading.delete(id)
      throw error
    })
    this.#reading.set(id, reading)
    return reading
  }

  async #read (id: string): Promise<StoredApiKey | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : keyOf(row)
  }

  /**
   * Records a use unless one was recorded within LAST_USED_PRECISION_MS: the condition makes one
   * write a minute at most across every instance (each instance tries once a minute per key).
   */
  async touch (key: Pick<StoredApiKey, 'id'>, nowMs: number): Promise<void> {
    const now = new Date(nowMs).toISOString()
    await this.db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', key.id)
      .where((eb) => eb.or([
        eb('last_used_at', 'is', null),
        eb('last_used_at', '<=', new Date(nowMs - LAST_USED_PRECISION_MS).toISOString())
      ]))
      .execute()
  }
}
