import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0011_refresh_retries'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // The session's last rotation, for a retry of its spent token within
  // REFRESH_RETRY_WINDOW_S: that token's jti, the pair it was rotated into (sealed), and
  // until when. Each rotation overwrites it, so it names a token whose successor is unspent.
  await db.schema.alterTable('sessions').addColumn('retry_jti', 'text').execute()
  await db.schema.alterTable('sessions').addColumn('retry_pair', 'text').execute()
  await db.schema.alterTable('sessions').addColumn('retry_until', timestamp).execute()
  // The pairs past their window, for erasing: few rows at any time.
  await db.schema.createIndex('sessions_retry_until').on('sessions').column('retry_until')
    .where(sql.ref('retry_until'), 'is not', null).execute()
}
