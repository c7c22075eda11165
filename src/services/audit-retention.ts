import { setImmediate as nextTurn } from 'node:timers/promises'
import type { AuditLogsRepository } from '../store/audit-logs.js'

/** Entries removed per statement: a few milliseconds of work on either database. */
export const PURGE_BATCH = 500

/**
 * Keeps the audit log within AUDIT_RETENTION_DAYS in the background: small batches, with the
 * event loop free between them, so a backlog of millions neither delays start-up nor holds
 * the database; one run at a time.
 */
export class AuditRetention {
  #running: Promise<number> | null = null
  #stopped = false

  constructor (private readonly deps: { auditLogs: AuditLogsRepository, retentionMs: number, batch?: number, now?: () => number }) {}

  /** Removes every entry past retention; resolves with how many (the run in progress, if one is). */
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
    const { auditLogs, retentionMs, batch = PURGE_BATCH, now = Date.now } = this.deps
    const before = new Date(now() - retentionMs).toISOString()
    let total = 0
    while (!this.#stopped) {
      const removed = await auditLogs.purgeBatch(before, batch)
      total += removed
      if (removed < batch) return total
      await nextTurn()
    }
    return total
  }
}
