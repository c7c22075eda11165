/**
 * A store's answer for one hit: the count in the window including this hit (one over `max`
 * when refused) and the milliseconds until the oldest entry slides out. `firstRefusal` is true
 * on a refusal when no refusal of this key was reported in the preceding window: the one to
 * report, so that a flood of refused requests is reported once a window, not request by request.
 */
export interface WindowState { current: number, ttl: number, firstRefusal: boolean }

/**
 * A sliding-window counter that also picks the refusals to report (`firstRefusal`): the
 * memory store answers at once, the shared one later.
 */
export interface RateLimitStore {
  hit: (key: string, windowMs: number, max: number) => WindowState | Promise<WindowState>
}

export type Clock = () => number

/**
 * One key's admitted request times, oldest first; `head` skips the ones that slid out.
 * `reportedAt`: when its last reported refusal was.
 */
interface HitLog { times: number[], head: number, reportedAt: number }

/**
 * The rate limits' sliding window (docs/api.md, "Rate limits"), as a log of request times per
 * key: entries older than the window are discarded, so at most `max` requests are admitted in
 * any window-long span. A refused request is not logged: a client over the limit regains one
 * slot as each old entry slides out, and a flood costs no memory beyond `max` entries per key
 * (and when its last refusal was reported; a key is kept until a window after that).
 */
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
      log = { times: [], head: 0, reportedAt: Number.NEGATIVE_INFINITY }
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
    const firstRefusal = !admitted && log.reportedAt <= now - windowMs
    if (firstRefusal) log.reportedAt = now
    const oldest = times[log.head]
    // Admitted: the new count. Refused (not logged): one over.
    return { current: count + 1, ttl: oldest === undefined ? windowMs : oldest + windowMs - now, firstRefusal }
  }

  /** Drops keys idle for a whole window (no admitted hit, no reported refusal), at most once per window. */
  #sweep (now: number, windowMs: number): void {
    if (now - this.#lastSweep < windowMs) return
    this.#lastSweep = now
    for (const [key, log] of this.#logs) {
      if (Math.max(log.times.at(-1) ?? 0, log.reportedAt) <= now - windowMs) this.#logs.delete(key)
    }
  }
}
