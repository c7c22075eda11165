import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0019_account_deletion'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  // An account whose holder asked for its deletion with a grace period (docs/api.md, "Deleting
  // one's account"): suspended meanwhile, erased once deletion_due_at has passed.
  await db.schema.alterTable('users').addColumn('deletion_due_at', timestampType(dialect)).execute()
  await db.schema.createIndex('users_deletion_due_at').on('users')
    .columns(['deletion_due_at', 'id']).where(sql.ref('deletion_due_at'), 'is not', null).execute()
  // Erasing an account finds the audit entries about it (as their actor it has an index
  // already) and the invitations sent to its address.
  await db.schema.createIndex('audit_logs_target_id_created_at').on('audit_logs').columns(['target_id', 'created_at']).execute()
  await db.schema.createIndex('organization_invitations_email').on('organization_invitations').column('email').execute()
}
