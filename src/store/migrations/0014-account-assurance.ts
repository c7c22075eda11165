import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0014_account_assurance'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // When the address was first proved (docs/security.md, "Account claiming"): null while the
  // account is unclaimed. Accounts verified before this migration count as claimed then.
  await db.schema.alterTable('users').addColumn('claimed_at', timestamp).execute()
  await db.updateTable('users').set({ claimed_at: sql.ref('updated_at') }).where('email_verified', '=', 1).execute()
  // Raised by a new password and by a claim: MFA challenges issued before it are refused.
  await db.schema.alterTable('users')
    .addColumn('credentials_version', 'integer', (column) => column.notNull().defaultTo(0)).execute()
  // How the session's sign-in was proved (the access tokens' auth_time and amr), and until
  // when a step-up (POST /auth/reauthenticate) lets it make sensitive changes.
  await db.schema.alterTable('sessions').addColumn('auth_time', timestamp).execute()
  await db.schema.alterTable('sessions').addColumn('amr', 'text').execute()
  await db.schema.alterTable('sessions').addColumn('reauthenticated_until', timestamp).execute()
}
