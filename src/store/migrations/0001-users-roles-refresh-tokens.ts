import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0001_users_roles_refresh_tokens'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  await db.schema.createTable('users')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('email', 'text', (column) => column.notNull().unique())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('totp_enabled_at', timestamp)
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('users_created_at_id').on('users').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('users_name_id').on('users').columns(['name', 'id']).execute()

  await db.schema.createTable('user_roles')
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addPrimaryKeyConstraint('user_roles_pk', ['user_id', 'role'])
    .execute()

  await db.schema.createTable('refresh_tokens')
    .addColumn('jti', 'text', (column) => column.primaryKey())
    .addColumn('session_id', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('device', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .addColumn('spent_at', timestamp)
    .addColumn('revoked_at', timestamp)
    .execute()
  await db.schema.createIndex('refresh_tokens_user_id').on('refresh_tokens').column('user_id').execute()
  await db.schema.createIndex('refresh_tokens_session_id').on('refresh_tokens').column('session_id').execute()
}
