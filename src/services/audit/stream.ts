import pino from 'pino'
import { auditEntryOf } from '../../store/audit-logs.js'
import type { AuditSink } from '../webhooks/publisher.js'

/**
 * The audit stream as NDJSON (AUDIT_STREAM=stdout or file; docs/operations.md, "Streaming the
 * audit log"): each stored entry, as the audit log's API shows it, one JSON object per line,
 * for a log shipper to forward to a SIEM. Written after the entry is committed, through
 * pino's asynchronous writer, so a request never waits on the file. `AUDIT_STREAM=webhooks`
 * is delivered as `audit.entry` events instead (src/services/webhooks/publisher.ts).
 */
export function ndjsonAuditSink (stream: { kind: string, file: string | null }): AuditSink | undefined {
  if (stream.kind !== 'stdout' && stream.kind !== 'file') return undefined
  const toFile = stream.kind === 'file' && stream.file !== null
  const destination = toFile
    ? pino.destination({ dest: stream.file ?? '', sync: false, mkdir: true, append: true })
    : pino.destination({ dest: 1, sync: false })
  return {
    write: (rows) => {
      if (rows.length > 0) destination.write(rows.map((row) => `${JSON.stringify(auditEntryOf(row))}\n`).join(''))
    },
    close: async () => {
      await new Promise<void>((resolve) => { destination.flush(() => { resolve() }) })
      // Standard output stays open for the request log.
      if (toFile) destination.end()
    }
  }
}
