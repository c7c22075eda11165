import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0004_mfa'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // Sealed (encrypted) TOTP secrets: the enabled one and one awaiting its first code.
  await db.schema.alterTable('users').addColumn('totp_secret', 'text').execute()
  await db.schema.alterTable('users').addColumn('totp_pending_secret', 'text').execute()
  // The last accepted time step: codes of it or earlier are refused (replay).
  await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute()

  await db.schema.createTable('mfa_backup_codes')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('mfa_backup_codes_user_id').on('mfa_backup_codes').column('user_id').execute()
}
