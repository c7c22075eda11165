import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'

export const name = '0034_lockouts_locked_until'

export async function up (db: Kysely<any>, _dialect: Dialect): Promise<void> {
  // The accounts locked now, for the operators' overview (docs/api.md, "Overview"): a range of
  // lockouts by their end, across accounts, the account's id read from the index alone.
  await db.schema.createIndex('lockouts_locked_until_user_id').on('lockouts').columns(['locked_until', 'user_id']).execute()
}
