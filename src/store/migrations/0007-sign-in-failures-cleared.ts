import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0007_sign_in_failures_cleared'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A successful sign-in marks its address's failures cleared (for the lockout) rather
  // than deleting them: the anomaly detector still counts them.
  await db.schema.alterTable('sign_in_failures').addColumn('cleared_at', timestamp).execute()
}
