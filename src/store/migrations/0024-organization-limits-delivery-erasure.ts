import type { Kysely } from 'kysely'

export const name = '0024_organization_limits_delivery_erasure'

export async function up (db: Kysely<any>): Promise<void> {
  // Who created an organization, for the limit on organizations an account creates a day
  // (docs/security.md, "Organization access"); null for those created before, or by an account since erased.
  await db.schema.alterTable('organizations').addColumn('created_by', 'text', (column) => column.references('users.id').onDelete('set null')).execute()
  await db.schema.createIndex('organizations_created_by_created_at').on('organizations').columns(['created_by', 'created_at']).execute()
  // The invitations an account sent, and those an address received, across organizations, counted by time.
  // Each supersedes the index on its first column alone, which it serves as well.
  await db.schema.createIndex('organization_invitations_invited_by_created_at').on('organization_invitations')
    .columns(['invited_by', 'created_at']).execute()
  await db.schema.dropIndex('organization_invitations_invited_by').execute()
  await db.schema.createIndex('organization_invitations_email_created_at').on('organization_invitations')
    .columns(['email', 'created_at']).execute()
  await db.schema.dropIndex('organization_invitations_email').execute()
  // The audit entry a delivery stands for: erasing an account scrubs the deliveries of its entries too.
  await db.schema.alterTable('webhook_deliveries').addColumn('audit_log_id', 'text').execute()
  await db.schema.createIndex('webhook_deliveries_audit_log_id').on('webhook_deliveries').column('audit_log_id').execute()
}
