import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0002_sessions_revocations_sign_in_failures'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  await db.schema.createTable('sessions')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('device', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('last_used_at', timestamp, (column) => column.notNull())
    .addColumn('revoked_at', timestamp)
    .addColumn('revoked_reason', 'text')
    .execute()
  await db.schema.createIndex('sessions_user_id_created_at').on('sessions')
    .columns(['user_id', 'created_at', 'id']).execute()

  // The access token issued with each refresh token, so logout finds its session.
  await db.schema.alterTable('refresh_tokens').addColumn('access_jti', 'text').execute()
  await db.schema.createIndex('refresh_tokens_access_jti').on('refresh_tokens').column('access_jti').execute()

  await db.schema.createTable('revoked_tokens')
    .addColumn('jti', 'text', (column) => column.primaryKey())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('revoked_tokens_created_at').on('revoked_tokens').column('created_at').execute()
  await db.schema.createIndex('revoked_tokens_expires_at').on('revoked_tokens').column('expires_at').execute()

  await db.schema.createTable('sign_in_failures')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('ip', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('sign_in_failures_user_id_created_at').on('sign_in_failures')
    .columns(['user_id', 'created_at']).execute()

  await db.schema.createTable('lockouts')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    // null: the account is locked for every address.
    .addColumn('ip', 'text')
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('locked_until', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('lockouts_user_id_locked_until').on('lockouts')
    .columns(['user_id', 'locked_until']).execute()
}
