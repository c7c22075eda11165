import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0005_oauth'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  await db.schema.createTable('user_identities')
    .addColumn('provider', 'text', (column) => column.notNull())
    .addColumn('subject', 'text', (column) => column.notNull())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('email', 'text')
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addPrimaryKeyConstraint('user_identities_pk', ['provider', 'subject'])
    .execute()
  await db.schema.createIndex('user_identities_user_id').on('user_identities').column('user_id').execute()

  // Used when REDIS_URL is unset: OAuth state, stored by its hash, single use.
  await db.schema.createTable('oauth_states')
    .addColumn('state_hash', 'text', (column) => column.primaryKey())
    .addColumn('provider', 'text', (column) => column.notNull())
    .addColumn('code_verifier', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('oauth_states_expires_at').on('oauth_states').column('expires_at').execute()
}
