import type { ServiceDependencies } from '../dependencies.js'
import { AuditLogService } from './log.js'

export { type AnomalyDetector, RecentSecurityEventsDetector } from './anomalies.js'
export type { EntryPublisher } from './storage.js'
export type { AuditSink } from './stream.js'
export type { AuditChange, AuditTrail, AuditTrailOptions, Recorded } from './trail.js'

/**
 * The audit log as its route reads it; the trail that records is built with the app
 * (src/plugins/application/audit.ts).
 */
export function auditServices ({ repositories, cursors }: ServiceDependencies) {
  return { auditLog: new AuditLogService({ auditLogs: repositories.auditLogs, cursors }) }
}
