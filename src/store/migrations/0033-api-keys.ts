import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0033_api_keys'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // An API key (docs/api.md, "API keys"): a person's (user_id) or an organization's
  // (organization_id, with its role), kept as the SHA-256 of the key.
  await db.schema.createTable('api_keys')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'text', (column) => column.references('organizations.id').onDelete('cascade'))
    .addColumn('role', 'text')
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('key_hash', 'text', (column) => column.notNull())
    .addColumn('scopes', 'text', (column) => column.notNull())
    .addColumn('created_by', 'text', (column) => column.references('users.id').onDelete('set null'))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp)
    .addColumn('last_used_at', timestamp)
    .execute()
  // A person's keys and an organization's, for their lists, their limit and the cascades.
  await db.schema.createIndex('api_keys_user_id_created_at').on('api_keys').columns(['user_id', 'created_at']).execute()
  await db.schema.createIndex('api_keys_organization_id_created_at').on('api_keys')
    .columns(['organization_id', 'created_at']).execute()
  await db.schema.createIndex('api_keys_created_by').on('api_keys').column('created_by').execute()
}
