import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0028_scim_directories'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // An organization's directory that provisions its people over SCIM 2.0 (docs/api.md, "SCIM provisioning").
  await db.schema.createTable('scim_directories')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('organization_id', 'text', (column) => column.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'text', (column) => column.notNull())
    // The SHA-256 of the directory's bearer token: the token itself is shown once.
    .addColumn('token_hash', 'text', (column) => column.notNull().unique())
    // JSON: group display names to organization roles.
    .addColumn('role_mapping', 'text', (column) => column.notNull())
    .addColumn('default_role', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('scim_directories_organization_id').on('scim_directories').column('organization_id').execute()
  // The people a directory provisioned: each an account, its SCIM resource as the directory last wrote it.
  await db.schema.createTable('scim_users')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('directory_id', 'text', (column) => column.notNull().references('scim_directories.id').onDelete('cascade'))
    .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    // userName in lower case (SCIM compares it case-insensitively); externalId as the directory gave it.
    .addColumn('user_name', 'text', (column) => column.notNull())
    .addColumn('external_id', 'text')
    .addColumn('active', 'integer', (column) => column.notNull())
    .addColumn('resource', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('scim_users_directory_id_user_name').on('scim_users')
    .columns(['directory_id', 'user_name']).unique().execute()
  // One User per account in a directory.
  await db.schema.createIndex('scim_users_directory_id_user_id').on('scim_users')
    .columns(['directory_id', 'user_id']).unique().execute()
  // A directory's users in pages, oldest first.
  await db.schema.createIndex('scim_users_directory_id_id').on('scim_users').columns(['directory_id', 'id']).execute()
  // Filtered by externalId, in pages of the list's order.
  await db.schema.createIndex('scim_users_directory_id_external_id_id').on('scim_users')
    .columns(['directory_id', 'external_id', 'id']).execute()
  await db.schema.createIndex('scim_users_user_id').on('scim_users').column('user_id').execute()
  await db.schema.createTable('scim_groups')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('directory_id', 'text', (column) => column.notNull().references('scim_directories.id').onDelete('cascade'))
    .addColumn('display_name', 'text', (column) => column.notNull())
    .addColumn('external_id', 'text')
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('scim_groups_directory_id_id').on('scim_groups').columns(['directory_id', 'id']).execute()
  await db.schema.createIndex('scim_groups_directory_id_display_name_id').on('scim_groups')
    .columns(['directory_id', 'display_name', 'id']).execute()
  await db.schema.createIndex('scim_groups_directory_id_external_id_id').on('scim_groups')
    .columns(['directory_id', 'external_id', 'id']).execute()
  await db.schema.createTable('scim_group_members')
    .addColumn('group_id', 'text', (column) => column.notNull().references('scim_groups.id').onDelete('cascade'))
    .addColumn('scim_user_id', 'text', (column) => column.notNull().references('scim_users.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('scim_group_members_pkey', ['group_id', 'scim_user_id'])
    .execute()
  await db.schema.createIndex('scim_group_members_scim_user_id').on('scim_group_members').column('scim_user_id').execute()
}
