import { setTimeout as pause } from 'node:timers/promises'

/**
 * Entries removed per statement. On SQLite with a million entries, a statement of 50 took
 * 0.4 ms (median; 0.7 ms at the 90th percentile), one of 200 took 1.7 ms (15 ms at the 90th):
 * each statement holds the event loop, so the smaller batch delays a request meeting it less
 * (docs/performance.md, "Scale"). A million entries then take about three and a half minutes.
 */
export const PURGE_BATCH = 50

/**
 * The wait between batches. Run back to back, batches took turns with every await of every
 * request, and a page read at a million rows waited for several of them (medians of 30–120 ms
 * against 2–16 ms without the purge, bench/RESULTS.md, "scale"); paced, a request meets at most
 * one.
 */
export const PURGE_PAUSE_MS = 10

/**
 * Keeps a table within its retention in the background (the audit log within
 * AUDIT_RETENTION_DAYS, settled webhook deliveries within WEBHOOK_DELIVERY_RETENTION_DAYS):
 * small batches, with the event loop free for PURGE_PAUSE_MS between them, so a backlog of
 * millions neither delays start-up nor holds the database or the event loop; one run at a time.
 */
export class Retention {
  #running: Promise<number> | null = null
  #stopped = false

  constructor (private readonly deps: {
    /** Removes up to `limit` of the oldest rows created before `before`; how many went. */
    purgeBatch: (before: string, limit: number) => Promise<number>
    retentionMs: number
    batch?: number
    pauseMs?: number
    now?: () => number
  }) {}

  /** Removes every row past retention; resolves with how many (the run in progress, if one is). */
  async purge (): Promise<number> {
    this.#running ??= this.#purge().finally(() => { this.#running = null })
    return await this.#running
  }

  /** Ends the run in progress after its current batch (at shutdown); no run starts after. */
  async stop (): Promise<void> {
    this.#stopped = true
    await this.#running
  }

  async #purge (): Promise<number> {
    const { purgeBatch, retentionMs, batch = PURGE_BATCH, pauseMs = PURGE_PAUSE_MS, now = Date.now } = this.deps
    const before = new Date(now() - retentionMs).toISOString()
    let total = 0
    while (!this.#stopped) {
      const removed = await purgeBatch(before, batch)
      total += removed
      if (removed < batch) return total
      await pause(pauseMs)
    }
    return total
  }
}
