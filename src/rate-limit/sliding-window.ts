/**
 * A store's answer for one hit: the count in the window including this hit (one over `max`
 * when refused) and the milliseconds until the oldest entry slides out.
 */
export interface WindowState { current: number, ttl: number }

/** A sliding-window counter: the memory store answers at once, the shared one later. */
export interface RateLimitStore {
  hit: (key: string, windowMs: number, max: number) => WindowState | Promise<WindowState>
}

export type Clock = () => number

/**
 * Spec section 8's sliding window, as a log of request times per key: entries older than the
 * window are discarded, so at most `max` requests are admitted in any window-long span. A
 * refused request is not logged: a client over the limit regains one slot as each old entry
 * slides out, and a flood costs no memory beyond `max` entries per key.
 */
/** One key's admitted request times, oldest first; `head` skips the ones that slid out. */
interface HitLog { times: number[], head: number }

export class SlidingWindowMemoryStore implements RateLimitStore {
  readonly #logs = new Map<string, HitLog>()
  #lastSweep = 0

  constructor (private readonly now: Clock = Date.now) {}

  /** Amortized O(1): times arrive in order. */
  hit (key: string, windowMs: number, max: number): WindowState {
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
    // Admitted: the new count. Refused (not logged): one over.
    return { current: count + 1, ttl: oldest === undefined ? windowMs : oldest + windowMs - now }
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
