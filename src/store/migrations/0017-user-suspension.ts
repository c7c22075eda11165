import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0017_user_suspension'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A suspension (docs/api.md, "Suspension"): in force from suspended_at until suspended_until
  // (null: until lifted); lifting it clears all four.
  for (const [column, type] of [['suspended_at', timestamp], ['suspended_until', timestamp], ['suspension_reason', 'text'], ['suspended_by', 'text']] as const) {
    await db.schema.alterTable('users').addColumn(column, type).execute()
  }
}
