import { uuidv7 } from '../../store/ids.js'
import type { AuditLogsTable, Db, WebhookDeliveriesTable } from '../../store/types.js'
import type { WebhooksRepository } from '../../store/webhooks.js'
import type { EntryPublisher } from '../audit/index.js'
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
export class WebhookPublisher implements EntryPublisher {
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
