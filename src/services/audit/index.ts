import type { ServiceDependencies } from '../dependencies.js'
import { Retention } from '../retention.js'
import { AuditLogService } from './log.js'

export { type AnomalyDetector, RecentSecurityEventsDetector } from './anomalies.js'
export { auditStorage, type EntryPublisher } from './storage.js'
export { type AuditSink, auditStreamSink } from './stream.js'
export { type AuditChange, type AuditFields, AuditTrail, type AuditTrailOptions, type Recorded } from './trail.js'

const DAY = 24 * 60 * 60 * 1000

/**
 * The audit log as its route reads it, and the purge of entries past AUDIT_RETENTION_DAYS (a
 * background job). The trail that records is built before the services, which take it
 * (createAuditTrail, src/services/audit-trail.ts).
 */
export function auditServices ({ config, repositories, cursors }: ServiceDependencies) {
  const { auditLogs } = repositories
  return {
    auditLog: new AuditLogService({ auditLogs, cursors }),
    auditRetention: new Retention({
      purgeBatch: async (before, limit) => await auditLogs.purgeBatch(before, limit),
      retentionMs: config.auditRetentionDays * DAY
    })
  }
}
