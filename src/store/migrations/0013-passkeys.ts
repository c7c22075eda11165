import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0013_passkeys'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A user's passkeys (docs/api.md, "Passkeys"): the credential id and COSE public key as
  // base64url text, and the signature counter, which must only go up.
  await db.schema.createTable('passkeys')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('credential_id', 'text', (column) => column.notNull().unique())
    .addColumn('public_key', 'text', (column) => column.notNull())
    .addColumn('counter', 'bigint', (column) => column.notNull())
    .addColumn('transports', 'text', (column) => column.notNull())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('last_used_at', timestamp)
    .execute()
  await db.schema.createIndex('passkeys_user_id_created_at_id').on('passkeys')
    .columns(['user_id', 'created_at', 'id']).execute()

  // Ceremony challenges without Redis: single use, by the SHA-256 of their key.
  await db.schema.createTable('passkey_challenges')
    .addColumn('key_hash', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text')
    .addColumn('challenge', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('passkey_challenges_expires_at').on('passkey_challenges').column('expires_at').execute()
}
