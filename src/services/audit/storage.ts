import type { AuditLogsRepository } from '../../store/audit-logs.js'
import type { AuditLogsTable, Db } from '../../store/types.js'
import type { AuditSink } from './stream.js'
import type { AuditTrailOptions } from './trail.js'

/**
 * What else an entry brings about, stored in its transaction: the webhook deliveries
 * (`WebhookPublisher`, src/services/webhooks/publisher.ts), which the audit trail knows only as this.
 */
export interface EntryPublisher {
  /** Whether the rows bring anything about. */
  publishes: (rows: AuditLogsTable[]) => boolean
  /** Stores, on `trx`, what the rows bring about; how many. */
  publish: (rows: AuditLogsTable[], trx: Db) => Promise<number>
}

/**
 * How the audit trail stores its entries: each write, batched or with its change, stores the
 * entries and their webhook deliveries in one transaction; then the sink gets the entries, and
 * `published` is called when deliveries were stored (to send them at once).
 */
export function auditStorage (deps: {
  auditLogs: AuditLogsRepository
  publisher: EntryPublisher
  published: () => void
  sink?: AuditSink
}): Pick<AuditTrailOptions, 'write' | 'writeWith' | 'storedAlone'> {
  const writeWith: AuditTrailOptions['writeWith'] = async (change, rowsOf) => {
    let stored: AuditLogsTable[] = []
    let published = 0
    const result = await deps.auditLogs.insertWith(change, rowsOf, async (rows, trx) => {
      stored = rows
      published = await deps.publisher.publish(rows, trx)
    })
    deps.sink?.write(stored)
    if (published > 0) deps.published()
    return result
  }
  return {
    write: async (rows) => { await writeWith(async () => undefined, () => rows) },
    writeWith,
    // Rows no webhook stands for may be stored by the change's own statement; the sink gets them once stored.
    storedAlone: (rows) => deps.publisher.publishes(rows) ? undefined : () => { deps.sink?.write(rows) }
  }
}
