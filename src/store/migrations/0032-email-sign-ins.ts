import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0032_email_sign_ins'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A sign-in by e-mail (docs/api.md, "Signing in by e-mail"): one message carries a code and a
  // link, kept as hashes only. The link, once confirmed on the service's page, hands the
  // application a one-time token (token_hash); the message signs in once, by its code or that token.
  await db.schema.createTable('email_sign_ins')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('email', 'text', (column) => column.notNull())
    // null: no account has the address yet (one is made at the sign-in, where EMAIL_SIGN_IN=on).
    .addColumn('user_id', 'text', (column) => column.references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (column) => column.notNull())
    .addColumn('link_hash', 'text', (column) => column.notNull().unique())
    .addColumn('token_hash', 'text', (column) => column.unique())
    .addColumn('confirmed_at', timestamp)
    .addColumn('redirect_to', 'text')
    .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .addColumn('used_at', timestamp)
    .execute()
  // The codes sent to an address, newest first, and how many were sent this hour.
  await db.schema.createIndex('email_sign_ins_email_created_at').on('email_sign_ins').columns(['email', 'created_at']).execute()
  // The account's, for its erasure (the cascade).
  await db.schema.createIndex('email_sign_ins_user_id').on('email_sign_ins').column('user_id').execute()
  // Expired requests, for the retention purge.
  await db.schema.createIndex('email_sign_ins_expires_at').on('email_sign_ins').column('expires_at').execute()
}
