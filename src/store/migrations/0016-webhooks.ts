import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0016_webhooks'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // Webhook endpoints (docs/api.md, "Webhooks"): the signing secrets sealed under the
  // service's secret; a rotation keeps the previous one until previous_secret_expires_at.
  await db.schema.createTable('webhook_endpoints')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('url', 'text', (column) => column.notNull())
    .addColumn('description', 'text', (column) => column.notNull())
    // A JSON array of event types.
    .addColumn('event_types', 'text', (column) => column.notNull())
    .addColumn('secret', 'text', (column) => column.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_expires_at', timestamp)
    .addColumn('disabled_at', timestamp)
    .addColumn('disabled_reason', 'text')
    .addColumn('last_success_at', timestamp)
    .addColumn('created_by', 'text', (column) => column.references('users.id').onDelete('set null'))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('webhook_endpoints_created_at_id').on('webhook_endpoints').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('webhook_endpoints_created_by').on('webhook_endpoints').column('created_by').execute()

  // One row per event and endpoint, written in the transaction of the change it tells of.
  // next_attempt_at is null once the delivery is settled or while its endpoint is disabled, so
  // the due ones are found through a partial index that holds only those waiting.
  await db.schema.createTable('webhook_deliveries')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('endpoint_id', 'text', (column) => column.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('event_type', 'text', (column) => column.notNull())
    .addColumn('payload', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull())
    .addColumn('next_attempt_at', timestamp)
    .addColumn('claimed_until', timestamp)
    .addColumn('last_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries')
    .columns(['next_attempt_at', 'id']).where(sql.ref('next_attempt_at'), 'is not', null).execute()
  await db.schema.createIndex('webhook_deliveries_endpoint_id_created_at_id').on('webhook_deliveries')
    .columns(['endpoint_id', 'created_at', 'id']).execute()
  // The purge of settled deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS, oldest first. Partial,
  // so that PostgreSQL does not read it in order, filtering by endpoint, for an endpoint's page.
  await db.schema.createIndex('webhook_deliveries_settled_created_at').on('webhook_deliveries')
    .column('created_at').where(sql.ref('next_attempt_at'), 'is', null).execute()
}
