import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0009_email_recovery_message_factors'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // 0 or 1 on both databases (SQLite has no boolean): the response schema makes it true or false.
  await db.schema.alterTable('users')
    .addColumn('email_verified', 'integer', (column) => column.notNull().defaultTo(0)).execute()
  await db.schema.alterTable('users').addColumn('phone', 'text').execute()
  await db.schema.alterTable('users').addColumn('mfa_email_enabled_at', timestamp).execute()
  await db.schema.alterTable('users').addColumn('mfa_sms_enabled_at', timestamp).execute()

  // E-mail verification and password reset tokens, by the SHA-256 of the token only.
  await db.schema.createTable('one_time_tokens')
    .addColumn('token_hash', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (column) => column.notNull())
    // The address a verification token verifies: a token sent before an e-mail change verifies nothing after it.
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .addColumn('used_at', timestamp)
    .execute()
  await db.schema.createIndex('one_time_tokens_user_id_purpose_created_at').on('one_time_tokens')
    .columns(['user_id', 'purpose', 'created_at']).execute()

  // Messages waiting to be delivered (mail, SMS); a row leaves once delivered or given up.
  await db.schema.createTable('outbox')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('channel', 'text', (column) => column.notNull())
    .addColumn('recipient', 'text', (column) => column.notNull())
    .addColumn('subject', 'text', (column) => column.notNull())
    .addColumn('text_body', 'text', (column) => column.notNull())
    .addColumn('html_body', 'text')
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('next_attempt_at', timestamp, (column) => column.notNull())
    // Set while one instance is delivering the row, so no other sends it at the same time.
    .addColumn('claimed_until', timestamp)
    .addColumn('last_error', 'text')
    .execute()
  await db.schema.createIndex('outbox_next_attempt_at').on('outbox').columns(['next_attempt_at', 'id']).execute()

  // Sign-in codes sent by e-mail or SMS for one MFA challenge (its token's jti).
  await db.schema.createTable('mfa_message_codes')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('challenge_jti', 'text', (column) => column.notNull())
    .addColumn('method', 'text', (column) => column.notNull())
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .addColumn('used_at', timestamp)
    .execute()
  await db.schema.createIndex('mfa_message_codes_user_id_challenge_jti').on('mfa_message_codes')
    .columns(['user_id', 'challenge_jti']).execute()
}
