import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0023_authorization_server_keys'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  // The keys the authorization server signs ID tokens with (docs/operations.md, "ID-token
  // keys"): one per algorithm (RS256, ES256, EdDSA) in each generation, the private key sealed.
  // A generation is staged (published), signing, or retiring (still published) while it rotates.
  await db.schema.createTable('authorization_server_keys')
    .addColumn('kid', 'text', (column) => column.primaryKey())
    .addColumn('algorithm', 'text', (column) => column.notNull())
    .addColumn('generation', 'integer', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('private_key', 'text', (column) => column.notNull())
    .addColumn('created_at', timestampType(dialect), (column) => column.notNull())
    .execute()
  // Instances starting together each make the first generation: one insert wins, per algorithm.
  await db.schema.createIndex('authorization_server_keys_generation_algorithm').unique()
    .on('authorization_server_keys').columns(['generation', 'algorithm']).execute()
  // The algorithm a client's ID tokens are signed with (null: RS256, OpenID Connect's default).
  await db.schema.alterTable('oauth_clients').addColumn('id_token_signed_response_alg', 'text').execute()
}
