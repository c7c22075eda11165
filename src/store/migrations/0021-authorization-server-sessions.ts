import type { Kysely } from 'kysely'

export const name = '0021_authorization_server_sessions'

export async function up (db: Kysely<any>): Promise<void> {
  // A sign-in at the authorization server's pages opens a session of the service (docs/api.md,
  // "Authorization server"): the provider's session (its uid) names it, and is over when it is.
  await db.schema.alterTable('sessions').addColumn('authorization_session_uid', 'text').execute()
  await db.schema.createIndex('sessions_authorization_session_uid').on('sessions').column('authorization_session_uid').execute()
  // The organization a consent chose for the `organization` scope (org_id and org_roles).
  await db.schema.alterTable('authorization_artifacts').addColumn('organization_id', 'text').execute()
}
