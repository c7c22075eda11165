import type { AuditLogsRepository } from '../../store/audit-logs.js'
import { uuidv7 } from '../../store/ids.js'
import type { AuditLogsTable, Db, WebhookDeliveriesTable } from '../../store/types.js'
import type { WebhooksRepository } from '../../store/webhooks.js'
import type { AuditSink, AuditTrailOptions } from '../audit/index.js'
import { type WebhookEvent, webhookEventsOf } from './events.js'

/** One event to one endpoint, due now: the row its delivery starts as; `auditLogId`, the entry it stands for. */
export function deliveryRow (
  endpointId: string, event: WebhookEvent, timestamp: string, auditLogId: string | null = null
): WebhookDeliveriesTable {
  return {
    id: uuidv7(),
    endpoint_id: endpointId,
    event_type: event.type,
    // The Standard Webhooks payload: type, timestamp and data.
    payload: JSON.stringify({ type: event.type, timestamp, data: event.data }),
    status: 'pending',
    attempts: 0,
    next_attempt_at: timestamp,
    claimed_until: null,
    last_status: null,
    last_error: null,
    created_at: timestamp,
    updated_at: timestamp,
    audit_log_id: auditLogId
  }
}

/**
 * Turns audited changes into webhook deliveries in the change's own transaction (docs/api.md,
 * "Webhooks"): a change is never kept without its deliveries, nor a delivery stored for a
 * change that rolled back. Each endpoint subscribed to an event gets a delivery of its own.
 */
export class WebhookPublisher {
  constructor (private readonly deps: { webhooks: WebhooksRepository, streamAudit: boolean }) {}

  /** Whether the audit rows bring about deliveries (to endpoints subscribed to them, if any). */
  publishes (rows: AuditLogsTable[]): boolean {
    return rows.some((row) => webhookEventsOf(row, this.deps.streamAudit).length > 0)
  }

  /** Stores, on `trx`, the deliveries the audit rows bring about; how many. */
  async publish (rows: AuditLogsTable[], trx: Db): Promise<number> {
    const events = rows.flatMap((row) =>
      webhookEventsOf(row, this.deps.streamAudit).map((event) => ({ event, row })))
    if (events.length === 0) return 0
    const endpoints = await this.deps.webhooks.subscriptions(trx)
    const deliveries = events.flatMap(({ event, row }) => endpoints
      .filter((endpoint) => endpoint.events.includes(event.type))
      .map((endpoint) => deliveryRow(endpoint.id, event, row.created_at, row.id)))
    await this.deps.webhooks.addDeliveries(deliveries, trx)
    return deliveries.length
  }
}

/**
 * How the audit trail stores its entries: each write, batched or with its change, stores the
 * entries and their webhook deliveries in one transaction; then the sink gets the entries, and
 * `published` is called when deliveries were stored (to send them at once).
 */
export function auditStorage (deps: {
  auditLogs: AuditLogsRepository
  publisher: WebhookPublisher
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
