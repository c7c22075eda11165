import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0018_impersonations'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // An administrator acting as a user (docs/api.md, "Impersonation"): one access token each,
  // kept so that ending the user's sessions (a new password, a suspension) revokes it too.
  await db.schema.createTable('impersonations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('impersonator_id', 'text', (column) => column.references('users.id').onDelete('set null'))
    .addColumn('reason', 'text', (column) => column.notNull())
    .addColumn('access_jti', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('impersonations_user_id_expires_at').on('impersonations').columns(['user_id', 'expires_at']).execute()
  await db.schema.createIndex('impersonations_impersonator_id').on('impersonations').column('impersonator_id').execute()
}
