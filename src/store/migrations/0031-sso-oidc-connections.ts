import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'

export const name = '0031_sso_oidc_connections'

export async function up (db: Kysely<any>, _dialect: Dialect): Promise<void> {
  // A connection is to a SAML IdP or to an organization's own OpenID provider (docs/api.md,
  // "Enterprise sign-in"); an OpenID one leaves the idp_ columns empty.
  await db.schema.alterTable('sso_connections')
    .addColumn('kind', 'text', (column) => column.notNull().defaultTo('saml')).execute()
  await db.schema.alterTable('sso_connections').addColumn('oidc_issuer', 'text').execute()
  await db.schema.alterTable('sso_connections').addColumn('oidc_client_id', 'text').execute()
  // Sealed (src/security/secret-box.ts): the only copy of what the provider issued.
  await db.schema.alterTable('sso_connections').addColumn('oidc_client_secret', 'text').execute()
  await db.schema.alterTable('sso_connections').addColumn('oidc_token_endpoint_auth_method', 'text').execute()
  // JSON array of scope tokens.
  await db.schema.alterTable('sso_connections').addColumn('oidc_scopes', 'text').execute()
}
