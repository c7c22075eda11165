import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType, trigramOperators } from './columns.js'

export const name = '0015_organizations'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // Organizations (docs/api.md, "Organizations"); the slug is unique as written (lower case).
  await db.schema.createTable('organizations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('slug', 'text', (column) => column.notNull().unique())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('organizations_created_at_id').on('organizations').columns(['created_at', 'id']).execute()

  // One role per member. Deleting either side deletes the membership, never the other side.
  await db.schema.createTable('organization_members')
    .addColumn('organization_id', 'text', (column) => column.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addPrimaryKeyConstraint('organization_members_pkey', ['organization_id', 'user_id'])
    .execute()
  // The members page of an organization in joining order (and its cursor), and a user's organizations.
  await db.schema.createIndex('organization_members_organization_id_created_at_user_id').on('organization_members')
    .columns(['organization_id', 'created_at', 'user_id']).execute()
  await db.schema.createIndex('organization_members_user_id').on('organization_members')
    .columns(['user_id', 'organization_id']).execute()

  // Invitations: the token only as its SHA-256, the role fixed when inviting.
  await db.schema.createTable('organization_invitations')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organization_id', 'text', (column) => column.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('email', 'text', (column) => column.notNull())
    .addColumn('role', 'text', (column) => column.notNull())
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    .addColumn('invited_by', 'text', (column) => column.references('users.id').onDelete('set null'))
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('expires_at', timestamp, (column) => column.notNull())
    // Accepted or withdrawn: no longer usable, yet still counted by the hourly limit on invitations.
    .addColumn('closed_at', timestamp)
    .execute()
  await db.schema.createIndex('organization_invitations_organization_id_created_at_id').on('organization_invitations')
    .columns(['organization_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('organization_invitations_organization_id_email').on('organization_invitations')
    .columns(['organization_id', 'email']).execute()
  await db.schema.createIndex('organization_invitations_invited_by').on('organization_invitations')
    .column('invited_by').execute()

  // The organization a session's tokens speak for (POST /auth/organization); a refresh re-reads the membership.
  await db.schema.alterTable('sessions').addColumn('organization_id', 'text').execute()
  await db.schema.createIndex('sessions_organization_id').on('sessions').column('organization_id').execute()
  // The organization the access token issued with each refresh token speaks for: a membership
  // change revokes exactly the access tokens that carry it.
  await db.schema.alterTable('refresh_tokens').addColumn('organization_id', 'text').execute()
  await db.schema.createIndex('refresh_tokens_organization_id_user_id_created_at').on('refresh_tokens')
    .columns(['organization_id', 'user_id', 'created_at']).execute()

  // A search of an organization's members matches addresses as well as names: on PostgreSQL a
  // trigram index serves it as the names' (migration 0010) serves theirs, so a rare term reads
  // the few users it matches rather than every member (docs/performance.md). SQLite's search
  // index covers names alone.
  if (dialect === 'postgres') {
    await sql`create index users_email_trigram on users using gin (lower(email) ${await trigramOperators(db)})`.execute(db)
  }
}
