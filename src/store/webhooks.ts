import type { ExpressionBuilder } from 'kysely'
import type { Webhook, WebhookDelivery, WebhookEventType } from '../../schemas/webhooks.js'
import type { CollectionRequest } from '../collection/query.js'
import { countUpTo, countValuesUpTo } from './bounded-count.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import type { DatabaseSchema, Db, WebhookDeliveriesTable, WebhookEndpointsTable } from './types.js'

const ENDPOINT_COLUMNS = [
  'id', 'url', 'description', 'event_types', 'disabled_at', 'disabled_reason', 'previous_secret_expires_at', 'created_at', 'updated_at'
] as const
const DELIVERY_COLUMNS = [
  'id', 'event_type', 'status', 'attempts', 'last_status', 'last_error', 'next_attempt_at', 'created_at', 'updated_at'
] as const

type EndpointRow = Pick<WebhookEndpointsTable, typeof ENDPOINT_COLUMNS[number]>
type DeliveryRow = Pick<WebhookDeliveriesTable, typeof DELIVERY_COLUMNS[number]>

/** An endpoint with what sending to it needs: its secrets (sealed) and whether it is enabled. */
export interface EndpointForSending {
  id: string
  url: string
  secret: string
  previousSecret: string | null
  previousSecretExpiresAt: string | null
  enabled: boolean
  createdBy: string | null
}

/** A delivery claimed for sending. */
export interface ClaimedDelivery {
  id: string
  endpointId: string
  payload: string
  attempts: number
  createdAt: string
}

/** What one try came to. */
export interface DeliveryOutcome {
  status: WebhookDeliveriesTable['status']
  attempts: number
  nextAttemptAt: string | null
  lastStatus: number | null
  lastError: string | null
}

export type EndpointChanges = Partial<Pick<WebhookEndpointsTable, 'url' | 'description' | 'event_types'>> & { enabled?: boolean }

function toWebhook (row: EndpointRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: JSON.parse(row.event_types) as WebhookEventType[],
    enabled: row.disabled_at === null,
    disabled_reason: row.disabled_at === null ? null : row.disabled_reason,
    previous_secret_expires_at: row.previous_secret_expires_at,
    created_at: row.created_at,
    updated_at: row.updated_at
  }
}

/** A delivery as the API shows it. */
export function deliveryOf (row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    status: row.status,
    last_error: row.last_error,
    next_attempt_at: row.next_attempt_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
    event_type: row.event_type as WebhookEventType,
    attempts: Number(row.attempts),
    last_status: row.last_status === null ? null : Number(row.last_status)
  }
}

const unclaimed = (now: string) => (eb: ExpressionBuilder<DatabaseSchema, 'webhook_deliveries'>) =>
  eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', now)])

/** Webhook endpoints and their deliveries (docs/api.md, "Webhooks"). */
export class WebhooksRepository {
  readonly #endpoints
  readonly #deliveries

  constructor (private readonly db: Db, pages: PageStore) {
    this.#endpoints = new PageQueries<EndpointRow, {}>(() => db.selectFrom('webhook_endpoints'), ENDPOINT_COLUMNS, pages)
    this.#deliveries = new PageQueries<DeliveryRow, { endpointId: string }>(({ endpointId }) =>
      db.selectFrom('webhook_deliveries').where('endpoint_id', '=', endpointId), DELIVERY_COLUMNS, pages)
  }

  async create (row: WebhookEndpointsTable, db: Db = this.db): Promise<Webhook> {
    await db.insertInto('webhook_endpoints').values(row).execute()
    return toWebhook(row)
  }

  async find (id: string, db: Db = this.db): Promise<Webhook | undefined> {
    const row = await db.selectFrom('webhook_endpoints').select(ENDPOINT_COLUMNS).where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : toWebhook(row)
  }

  async list (request: CollectionRequest): Promise<CollectionResult<Webhook>> {
    const page = await this.#endpoints.run(request, {})
    return { ...page, items: page.items.map(toWebhook) }
  }

  /**
   * Changes an endpoint. Disabling it pauses its pending deliveries (they leave the due index);
   * enabling it makes them due at once.
   */
  async update (
    id: string, { enabled, ...changes }: EndpointChanges, now: string, db: Db = this.db
  ): Promise<Webhook | undefined> {
    const state = enabled === undefined
      ? {}
      : enabled ? { disabled_at: null, disabled_reason: null } : { disabled_at: now, disabled_reason: 'manual' as const }
    const row = await db.updateTable('webhook_endpoints').set({ ...changes, ...state, updated_at: now })
      .where('id', '=', id).returning(ENDPOINT_COLUMNS).executeTakeFirst()
    if (row === undefined) return undefined
    if (enabled !== undefined) await this.#schedulePending(id, enabled ? now : null, db)
    return toWebhook(row)
  }

  /** A new signing secret; the previous one stays until `previousExpiresAt`. */
  async rotateSecret (
    id: string, secret: string, previous: { secret: string, expiresAt: string }, now: string, db: Db = this.db
  ): Promise<Webhook | undefined> {
    const row = await db.updateTable('webhook_endpoints')
      .set({
        secret, previous_secret: previous.secret, previous_secret_expires_at: previous.expiresAt, updated_at: now
      })
      .where('id', '=', id).returning(ENDPOINT_COLUMNS).executeTakeFirst()
    return row === undefined ? undefined : toWebhook(row)
  }

  /** The endpoint's current sealed secret. */
  async sealedSecret (id: string, db: Db = this.db): Promise<string | undefined> {
    const row = await db.selectFrom('webhook_endpoints').select('secret').where('id', '=', id).executeTakeFirst()
    return row?.secret
  }

  /** Deletes an endpoint with its deliveries; false when there was none. */
  async delete (id: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst()
    return Number(result.numDeletedRows) > 0
  }

  /** The enabled endpoints with the event types each is subscribed to (a short table: read whole). */
  async subscriptions (db: Db = this.db): Promise<Array<{ id: string, events: string[] }>> {
    const rows = await db.selectFrom('webhook_endpoints').select(['id', 'event_types']).where('disabled_at', 'is', null).execute()
    return rows.map((row) => ({ id: row.id, events: JSON.parse(row.event_types) as string[] }))
  }

  async addDeliveries (rows: WebhookDeliveriesTable[], db: Db = this.db): Promise<void> {
    // Well under both dialects' bound-parameter limits per statement.
    for (let start = 0; start < rows.length; start += 50) {
      await db.insertInto('webhook_deliveries').values(rows.slice(start, start + 50)).execute()
    }
  }

  async listDeliveries (endpointId: string, request: CollectionRequest): Promise<CollectionResult<WebhookDelivery>> {
    const page = await this.#deliveries.run(request, { endpointId })
    return { ...page, items: page.items.map(deliveryOf) }
  }

  /**
   * Makes one of the endpoint's deliveries due now, whatever became of it (a manual retry);
   * its tries go on counting. Undefined when the endpoint has no such delivery.
   */
  async retryDelivery (
    endpointId: string, deliveryId: string, now: string, db: Db = this.db
  ): Promise<WebhookDelivery | undefined> {
    const row = await db.updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: now, claimed_until: null, updated_at: now })
      .where('id', '=', deliveryId).where('endpoint_id', '=', endpointId)
      .returning(DELIVERY_COLUMNS).executeTakeFirst()
    return row === undefined ? undefined : deliveryOf(row)
  }

  /**
   * Claims up to `limit` deliveries due at `now` until `claimedUntil`, for this caller alone
   * (through the partial index of those waiting): a delivery another instance holds is
   * skipped, and the claim is checked again on the row itself, so two instances claiming at
   * once never both get one.
   */
  async claimDue (now: string, claimedUntil: string, limit: number): Promise<ClaimedDelivery[]> {
    const rows = await this.db.updateTable('webhook_deliveries')
      .set({ claimed_until: claimedUntil })
      .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id')
        .where('next_attempt_at', 'is not', null).where('next_attempt_at', '<=', now).where(unclaimed(now))
        .orderBy('next_attempt_at').orderBy('id').limit(limit))
      .where('next_attempt_at', 'is not', null).where(unclaimed(now))
      .returning(['id', 'endpoint_id', 'payload', 'attempts', 'created_at'])
      .execute()
    return rows.map((row) => ({
      id: row.id,
      endpointId: row.endpoint_id,
      payload: row.payload,
      attempts: Number(row.attempts),
      createdAt: row.created_at
    }))
  }

  async endpointsForSending (ids: string[]): Promise<Map<string, EndpointForSending>> {
    if (ids.length === 0) return new Map()
    const rows = await this.db.selectFrom('webhook_endpoints')
      .select(['id', 'url', 'secret', 'previous_secret', 'previous_secret_expires_at', 'disabled_at', 'created_by'])
      .where('id', 'in', ids).execute()
    return new Map(rows.map((row) => [row.id, {
      id: row.id,
      url: row.url,
      secret: row.secret,
      previousSecret: row.previous_secret,
      previousSecretExpiresAt: row.previous_secret_expires_at,
      enabled: row.disabled_at === null,
      createdBy: row.created_by
    }]))
  }

  /** Stores what a try came to and releases the claim. */
  async settle (delivery: ClaimedDelivery, outcome: DeliveryOutcome, now: string): Promise<void> {
    await this.db.updateTable('webhook_deliveries').set({
      status: outcome.status,
      attempts: outcome.attempts,
      next_attempt_at: outcome.nextAttemptAt,
      claimed_until: null,
      last_status: outcome.lastStatus,
      last_error: outcome.lastError?.slice(0, 1000) ?? null,
      updated_at: now
    }).where('id', '=', delivery.id).execute()
  }

  /** The endpoints answered a delivery with a 2xx at `at` (what keeps a failing one from being disabled). */
  async markAnswered (endpointIds: string[], at: string): Promise<void> {
    if (endpointIds.length === 0) return
    await this.db.updateTable('webhook_endpoints').set({ last_success_at: at }).where('id', 'in', endpointIds).execute()
  }

  /** A claimed delivery of an endpoint disabled meanwhile: paused until the endpoint is enabled. */
  async pause (deliveryId: string): Promise<void> {
    await this.db.updateTable('webhook_deliveries').set({ next_attempt_at: null, claimed_until: null })
      .where('id', '=', deliveryId).where('status', '=', 'pending').execute()
  }

  /**
   * Disables an endpoint that has not answered any delivery with a 2xx since `since`, and
   * pauses its pending deliveries; false when it answered one since, or was disabled already.
   */
  async disableFailing (endpointId: string, since: string, now: string, db: Db = this.db): Promise<boolean> {
    const result = await db.updateTable('webhook_endpoints')
      .set({ disabled_at: now, disabled_reason: 'failing', updated_at: now })
      .where('id', '=', endpointId).where('disabled_at', 'is', null)
      .where((eb) => eb.or([eb('last_success_at', 'is', null), eb('last_success_at', '<', since)]))
      .executeTakeFirst()
    if (Number(result.numUpdatedRows) === 0) return false
    await this.#schedulePending(endpointId, null, db)
    return true
  }

  /**
   * What an operator checks of the deliveries (docs/api.md, "Overview"), each counted up to `cap`
   * through the index of the waiting ones: those due by `now` and not sent yet, those waiting for
   * a retry after a failed try, and the endpoints of these (among the first `cap`); and the endpoints disabled
   * for failing (a short table: read whole).
   */
  async health (now: string, cap: number) {
    const { db } = this
    const waiting = db.selectFrom('webhook_deliveries').where('next_attempt_at', 'is not', null)
    const retrying = waiting.where('next_attempt_at', '>', now).where('attempts', '>', 0)
    const [overdue, retries, endpoints, disabled] = await Promise.all([
      countUpTo(db, waiting.where('next_attempt_at', '<=', now).select('next_attempt_at'), cap),
      countUpTo(db, retrying.select('next_attempt_at'), cap),
      countValuesUpTo(db, retrying.select('endpoint_id as value'), cap),
      db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll().as('count'))
        .where('disabled_reason', '=', 'failing').where('disabled_at', 'is not', null).executeTakeFirstOrThrow()
    ])
    return { overdue, retries, endpointsRetrying: endpoints, endpointsDisabled: Number(disabled.count) }
  }

  /** Removes up to `limit` settled deliveries created before `before`, oldest first; how many went. */
  async purgeSettled (before: string, limit: number): Promise<number> {
    const result = await this.db.deleteFrom('webhook_deliveries')
      .where('id', 'in', (eb) => eb.selectFrom('webhook_deliveries').select('id')
        .where('next_attempt_at', 'is', null).where('created_at', '<', before).where('status', '!=', 'pending')
        .orderBy('created_at').limit(limit))
      .executeTakeFirst()
    return Number(result.numDeletedRows)
  }

  async #schedulePending (endpointId: string, at: string | null, db: Db): Promise<void> {
    await db.updateTable('webhook_deliveries').set({ next_attempt_at: at, claimed_until: null })
      .where('endpoint_id', '=', endpointId).where('status', '=', 'pending').execute()
  }
}
