import { type Kysely, sql } from 'kysely'

export const name = '0008_sessions_live_index'

export async function up (db: Kysely<any>): Promise<void> {
  // Every sign-in reads the account's live sessions (the concurrency limit). The index on
  // (user_id, created_at, id) stays, for cascades and the reuse count, but reaches the
  // live ones only past every session ended within the absolute timeout: an account that
  // signs in often (a script, a kiosk) piles those up. Built inside the migration's
  // transaction: on a large existing table, writes to sessions wait for it.
  await db.schema.createIndex('sessions_user_id_live').on('sessions').columns(['user_id', 'created_at', 'id'])
    .where(sql.ref('revoked_at'), 'is', null).execute()
}
