import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0003_audit_logs_trusted_devices'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  await db.schema.createTable('audit_logs')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('event', 'text', (column) => column.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('target_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('outcome', 'text', (column) => column.notNull())
    .addColumn('details', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('audit_logs_created_at_id').on('audit_logs').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('audit_logs_event_created_at').on('audit_logs').columns(['event', 'created_at']).execute()
  await db.schema.createIndex('audit_logs_actor_id_created_at').on('audit_logs')
    .columns(['actor_id', 'created_at']).execute()

  await db.schema.createTable('trusted_devices')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('device_id', 'text', (column) => column.notNull())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addUniqueConstraint('trusted_devices_user_device', ['user_id', 'device_id'])
    .execute()
  await db.schema.createIndex('trusted_devices_user_id_created_at').on('trusted_devices')
    .columns(['user_id', 'created_at', 'id']).execute()
}
