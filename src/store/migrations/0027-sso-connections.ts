import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0027_sso_connections'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // An organization's own identity providers (docs/api.md, "Enterprise sign-in"): SAML 2.0 for now.
  await db.schema.createTable('sso_connections')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organization_id', 'text', (column) => column.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('enabled', 'integer', (column) => column.notNull())
    .addColumn('idp_entity_id', 'text', (column) => column.notNull())
    .addColumn('idp_sso_url', 'text', (column) => column.notNull())
    // JSON: the IdP's signing certificates, DER in base64 (public keys, no secret).
    .addColumn('idp_certificates', 'text', (column) => column.notNull())
    // JSON: the attribute names read for the address, the name and the groups; and groups to roles.
    .addColumn('attribute_mapping', 'text', (column) => column.notNull())
    .addColumn('role_mapping', 'text', (column) => column.notNull())
    .addColumn('default_role', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('sso_connections_organization_id_created_at').on('sso_connections')
    .columns(['organization_id', 'created_at']).execute()
  // The IDs of assertions accepted, until they expire: none is accepted twice (in Redis when the service has it).
  await db.schema.createTable('sso_assertion_ids')
    .addColumn('key_hash', 'text', (column) => column.primaryKey())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('sso_assertion_ids_expires_at').on('sso_assertion_ids').column('expires_at').execute()
}
