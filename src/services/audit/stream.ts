import pino from 'pino'
import { auditEntryOf } from '../../store/audit-logs.js'
import type { AuditLogsTable } from '../../store/types.js'

/** Where the audit stream goes besides the table (AUDIT_STREAM=stdout or file): written once stored. */
export interface AuditSink {
  write: (rows: AuditLogsTable[]) => void
  close: () => Promise<void>
}

/**
 * The audit stream for a log shipper (AUDIT_STREAM=stdout or file; docs/operations.md,
 * "Streaming the audit log"): each stored entry, as the audit log's API shows it, written once
 * its transaction is committed. On stdout, each is a line of the service's own log
 * (`msg: "audit entry"`, the entry under `audit`), so that its lines and the request log's
 * never interleave; in a file, one JSON object per line, through pino's asynchronous writer, so a
 * request never waits on the disk. `AUDIT_STREAM=webhooks` is delivered as `audit.entry`
 * events instead (src/services/webhooks/publisher.ts).
 */
export function auditStreamSink (
  stream: { kind: string, file: string | null },
  log: { info: (entry: object, message: string) => void }
): AuditSink | undefined {
  if (stream.kind === 'stdout') {
    return {
      write: (rows) => { for (const row of rows) log.info({ audit: auditEntryOf(row) }, 'audit entry') },
      close: async () => {}
    }
  }
  if (stream.kind !== 'file' || stream.file === null) return undefined
  const destination = pino.destination({ dest: stream.file, sync: false, mkdir: true, append: true })
  return {
    write: (rows) => {
      if (rows.length > 0) destination.write(rows.map((row) => `${JSON.stringify(auditEntryOf(row))}\n`).join(''))
    },
    close: async () => {
      await new Promise<void>((resolve) => { destination.flush(() => { resolve() }) })
      destination.end()
    }
  }
}
