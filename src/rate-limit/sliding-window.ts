/** What @fastify/rate-limit expects back from a store: the count and ms until a slot frees. */
export interface WindowState { current: number, ttl: number }

export type Clock = () => number

/**
 * Spec section 8's sliding window, as a log of request times per key: entries older than the
 * window are discarded, so at most `max` requests are admitted in any window-long span. A
 * refused request is not logged: a client over the limit regains one slot as each old entry
 * slides out, and a flood costs no memory beyond `max` entries per key.
 */
/** One key's admitted request times, oldest first; `head` skips the ones that slid out. */
interface HitLog { times: number[], head: number }

export class SlidingWindowMemoryStore {
  readonly #logs = new Map<string, HitLog>()
  #lastSweep = 0

  constructor (private readonly now: Clock = Date.now) {}

  /** @fastify/rate-limit's store contract. Amortized O(1): times arrive in order. */
  incr (key: string, callback: (error: Error | null, state: WindowState) => void, windowMs: number, max: number): void {
    const now = this.now()
    this.#sweep(now, windowMs)
    let log = this.#logs.get(key)
    if (log === undefined) {
      log = { times: [], head: 0 }
      this.#logs.set(key, log)
    }
    const { times } = log
    while (log.head < times.length && (times[log.head] ?? 0) <= now - windowMs) log.head++
    // Compact once the expired prefix is the larger part.
    if (log.head > 64 && log.head * 2 > times.length) {
      times.splice(0, log.head)
      log.head = 0
    }
    const count = times.length - log.head
    const admitted = count < max
    if (admitted) times.push(now)
    const oldest = times[log.head]
    // Admitted: the new count. Refused (not logged): one over, as the plugin expects.
    callback(null, { current: count + 1, ttl: oldest === undefined ? windowMs : oldest + windowMs - now })
  }

  /** Every tier shares this store; tiers are told apart by the key's group suffix. */
  child (): this {
    return this
  }

  /** Drops keys idle for a whole window, at most once per window. */
  #sweep (now: number, windowMs: number): void {
    if (now - this.#lastSweep < windowMs) return
    this.#lastSweep = now
    for (const [key, log] of this.#logs) {
      if ((log.times.at(-1) ?? 0) <= now - windowMs) this.#logs.delete(key)
    }
  }
}
