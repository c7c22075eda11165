import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0020_authorization_server'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // Applications that sign people in with the service (docs/api.md, "Authorization server").
  // A secret is kept as its SHA-256 only (a random 256-bit value: a slow hash adds nothing);
  // none for a public client. The lists are JSON arrays.
  await db.schema.createTable('oauth_clients')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('secret_hash', 'text')
    .addColumn('redirect_uris', 'text', (column) => column.notNull())
    .addColumn('post_logout_redirect_uris', 'text', (column) => column.notNull())
    .addColumn('grant_types', 'text', (column) => column.notNull())
    .addColumn('scopes', 'text', (column) => column.notNull())
    .addColumn('disabled_at', timestamp)
    .addColumn('created_by', 'text', (column) => column.references('users.id').onDelete('set null'))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('oauth_clients_created_at_id').on('oauth_clients').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('oauth_clients_created_by').on('oauth_clients').column('created_by').execute()

  // What the authorization server (oidc-provider) keeps: sessions, interactions, grants, codes,
  // tokens, device codes; one row each, by model and id, its payload JSON. The columns beside
  // the payload are what it is looked up or ended by: the grant it belongs to, a device's user
  // code, a session's uid, and the account and client it is for (ending an account's sessions,
  // or deleting a client, removes theirs).
  await db.schema.createTable('authorization_artifacts')
    .addColumn('model', 'text', (column) => column.notNull())
    .addColumn('id', 'text', (column) => column.notNull())
    .addColumn('payload', 'text', (column) => column.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('user_code', 'text')
    .addColumn('uid', 'text')
    .addColumn('account_id', 'text')
    .addColumn('client_id', 'text')
    .addColumn('expires_at', timestamp)
    .addPrimaryKeyConstraint('authorization_artifacts_pkey', ['model', 'id'])
    .execute()
  await db.schema.createIndex('authorization_artifacts_grant_id').on('authorization_artifacts').column('grant_id').execute()
  await db.schema.createIndex('authorization_artifacts_model_user_code').on('authorization_artifacts').columns(['model', 'user_code']).execute()
  await db.schema.createIndex('authorization_artifacts_model_uid').on('authorization_artifacts').columns(['model', 'uid']).execute()
  await db.schema.createIndex('authorization_artifacts_account_id').on('authorization_artifacts').columns(['account_id', 'model']).execute()
  await db.schema.createIndex('authorization_artifacts_client_id').on('authorization_artifacts').column('client_id').execute()
  await db.schema.createIndex('authorization_artifacts_expires_at').on('authorization_artifacts').column('expires_at').execute()
}
