import type { Kysely } from 'kysely'

export const name = '0029_sso_idp_initiated'

export async function up (db: Kysely<any>): Promise<void> {
  // Where an IdP-initiated response sends the browser: the application's page that starts a sign-in
  // (docs/api.md, "Enterprise sign-in"); null refuses IdP-initiated responses.
  await db.schema.alterTable('sso_connections').addColumn('idp_initiated_login_url', 'text').execute()
}
