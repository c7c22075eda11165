/** What @fastify/rate-limit expects back from a store: the count and ms until a slot frees. */
export interface WindowState { current: number, ttl: number }

export type Clock = () => number

/**
 * Spec section 8's sliding window, as a log of request times per key: entries older than the
 * window are discarded, so at most `max` requests are admitted in any window-long span. A
 * refused request is not logged: a client over the limit regains one slot as each old entry
 * slides out, and a flood costs no memory beyond `max` entries per key.
 */
export class SlidingWindowMemoryStore {
  readonly #hits = new Map<string, number[]>()
  #lastSweep = 0

  constructor (private readonly now: Clock = Date.now) {}

  /** @fastify/rate-limit's store contract. */
  incr (key: string, callback: (error: Error | null, state: WindowState) => void, windowMs: number, max: number): void {
    const now = this.now()
    this.#sweep(now, windowMs)
    const hits = (this.#hits.get(key) ?? []).filter((time) => time > now - windowMs)
    const admitted = hits.length < max
    if (admitted) hits.push(now)
    if (hits.length > 0) this.#hits.set(key, hits)
    else this.#hits.delete(key)
    const oldest = hits[0]
    callback(null, { current: admitted ? hits.length : hits.length + 1, ttl: oldest === undefined ? windowMs : oldest + windowMs - now })
  }

  /** Every tier shares this store; tiers are told apart by the key's group suffix. */
  child (): this {
    return this
  }

  /** Drops keys idle for a whole window, at most once per window. */
  #sweep (now: number, windowMs: number): void {
    if (now - this.#lastSweep < windowMs) return
    this.#lastSweep = now
    for (const [key, hits] of this.#hits) {
      if ((hits.at(-1) ?? 0) <= now - windowMs) this.#hits.delete(key)
    }
  }
}
