import type { Redis } from 'ioredis'

/**
 * The authorization server's objects that live minutes and belong to no account's state
 * (interactions, replay markers, pushed requests), in Redis when it is configured
 * (docs/api.md, "Authorization server"): each a JSON value expiring with its object, and a
 * session's uid pointing at its interaction. Everything an account holds (sessions, consents,
 * codes, tokens) stays in the database, where ending the account's sessions finds it.
 */
export class RedisShortLivedArtifacts {
  constructor (private readonly redis: Redis) {}

  #key (model: string, id: string): string {
    return `authorization:${model}:${id}`
  }

  #uidKey (model: string, uid: string): string {
    return `authorization:${model}:uid:${uid}`
  }

  async upsert (model: string, id: string, payload: Record<string, unknown>, expiresInS: number): Promise<void> {
    const ttlMs = Math.max(1, Math.ceil(expiresInS * 1000))
    const writes = this.redis.multi().set(this.#key(model, id), JSON.stringify(payload), 'PX', ttlMs)
    if (typeof payload.uid === 'string') writes.set(this.#uidKey(model, payload.uid), id, 'PX', ttlMs)
    await writes.exec()
  }

  async find (model: string, id: string): Promise<Record<string, unknown> | undefined> {
    const stored = await this.redis.get(this.#key(model, id))
    return stored === null ? undefined : JSON.parse(stored) as Record<string, unknown>
  }

  async findByUid (model: string, uid: string): Promise<Record<string, unknown> | undefined> {
    const id = await this.redis.get(this.#uidKey(model, uid))
    return id === null ? undefined : await this.find(model, id)
  }

  /** Marks it used, in its payload, keeping its expiry. */
  async consume (model: string, id: string, consumedAt: number): Promise<void> {
    const key = this.#key(model, id)
    const stored = await this.redis.get(key)
    if (stored === null) return
    await this.redis.set(key, JSON.stringify({ ...JSON.parse(stored), consumed: consumedAt }), 'KEEPTTL')
  }

  async destroy (model: string, id: string): Promise<void> {
    const stored = await this.find(model, id)
    const keys = [this.#key(model, id), ...typeof stored?.uid === 'string' ? [this.#uidKey(model, stored.uid)] : []]
    await this.redis.del(...keys)
  }
}
