import { type Kysely, sql } from 'kysely'
import { uuidv7 } from '../ids.js'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0012_oauth_browser_sign_in'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // Identities get an id of their own, to be listed and unlinked by; those linked before are given one here.
  await db.schema.alterTable('user_identities').addColumn('id', 'text').execute()
  const linked = await db.selectFrom('user_identities').select(['provider', 'subject', 'created_at']).execute()
  for (const identity of linked) {
    await db.updateTable('user_identities').set({ id: uuidv7(Date.parse(String(identity.created_at))) })
      .where('provider', '=', identity.provider).where('subject', '=', identity.subject).execute()
  }
  if (dialect === 'postgres') await sql`alter table user_identities alter column id set not null`.execute(db)
  await db.schema.createIndex('user_identities_id').on('user_identities').column('id').unique().execute()

  // The OpenID nonce, and a browser application's return URL and PKCE challenge.
  await db.schema.alterTable('oauth_states').addColumn('nonce', 'text').execute()
  await db.schema.alterTable('oauth_states').addColumn('redirect_to', 'text').execute()
  await db.schema.alterTable('oauth_states').addColumn('code_challenge', 'text').execute()

  // Used when REDIS_URL is unset: a browser application's one-time code, by its hash, single use.
  await db.schema.createTable('oauth_exchange_codes')
    .addColumn('code_hash', 'text', (column) => column.primaryKey())
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider', 'text', (column) => column.notNull())
    .addColumn('code_challenge', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('oauth_exchange_codes_expires_at').on('oauth_exchange_codes')
    .column('expires_at').execute()
  await db.schema.createIndex('oauth_exchange_codes_user_id').on('oauth_exchange_codes').column('user_id').execute()
}
