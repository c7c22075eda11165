import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0030_sso_idp_metadata_url'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A connection configured by its IdP's metadata URL, read again daily so that a new signing
  // certificate is taken up before the old one retires (docs/api.md, "Enterprise sign-in").
  await db.schema.alterTable('sso_connections').addColumn('idp_metadata_url', 'text').execute()
  // When the metadata was last read and found usable.
  await db.schema.alterTable('sso_connections').addColumn('idp_metadata_read_at', timestamp).execute()
  // When it is next due; a failed read is tried again sooner, then later as failures follow one another.
  await db.schema.alterTable('sso_connections').addColumn('idp_metadata_due_at', timestamp).execute()
  await db.schema.alterTable('sso_connections')
    .addColumn('idp_metadata_failures', 'integer', (column) => column.notNull().defaultTo(0)).execute()
  // The refresh job's search for connections due, among those read by URL only.
  await db.schema.createIndex('sso_connections_idp_metadata_due_at').on('sso_connections').column('idp_metadata_due_at')
    .where(sql.ref('idp_metadata_url'), 'is not', null).execute()
}
