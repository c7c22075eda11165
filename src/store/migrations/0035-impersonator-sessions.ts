import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'

export const name = '0035_impersonator_sessions'

export async function up (db: Kysely<any>, _dialect: Dialect): Promise<void> {
  // The administrator's session an impersonation was started from (docs/api.md, "Impersonation"):
  // ending that session revokes the impersonation's token. Null for those started before.
  await db.schema.alterTable('impersonations').addColumn('impersonator_session_id', 'text').execute()
  await db.schema.createIndex('impersonations_impersonator_session_id').on('impersonations').column('impersonator_session_id').execute()
}
