import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0026_organization_domains'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // E-mail domains an organization claims (docs/api.md, "Verified domains"). Many organizations
  // may claim a domain, so no squatter blocks its owner; one only may hold it verified.
  await db.schema.createTable('organization_domains')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organization_id', 'text', (column) => column.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('domain', 'text', (column) => column.notNull())
    // Published in DNS by the claimant: not a secret, so kept as it is.
    .addColumn('verification_token', 'text', (column) => column.notNull())
    .addColumn('verified_at', timestamp)
    .addColumn('verified_by', 'text')
    // Its addresses sign in through the organization's identity provider only, never with a password.
    .addColumn('sso_required', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  // An organization's claims in order (its list, and the one claim per domain it holds).
  await db.schema.createIndex('organization_domains_organization_id_domain').on('organization_domains')
    .columns(['organization_id', 'domain']).unique().execute()
  // Which organization holds an address's domain verified: the lookup of every SSO sign-in.
  await db.schema.createIndex('organization_domains_verified_domain').on('organization_domains')
    .column('domain').unique().where(sql.ref('verified_at'), 'is not', null).execute()
}
