import type { Kysely } from 'kysely'
import type { Dialect } from '../types.js'
import { timestampType } from './columns.js'

export const name = '0006_posts_comments'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  const timestamp = timestampType(dialect)
  // A deleted user's posts and comments go with them (and comments with their post).
  await db.schema.createTable('posts')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('author_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('title', 'text', (column) => column.notNull())
    .addColumn('body', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .addColumn('updated_at', timestamp, (column) => column.notNull())
    .execute()
  // The list queries: by status (anonymous readers), by author (own posts, a user's posts).
  await db.schema.createIndex('posts_status_created_at_id').on('posts')
    .columns(['status', 'created_at', 'id']).execute()
  await db.schema.createIndex('posts_author_id_created_at_id').on('posts')
    .columns(['author_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('posts_created_at_id').on('posts').columns(['created_at', 'id']).execute()

  await db.schema.createTable('comments')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('post_id', 'text', (column) => column.notNull().references('posts.id').onDelete('cascade'))
    .addColumn('author_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
    .addColumn('body', 'text', (column) => column.notNull())
    .addColumn('created_at', timestamp, (column) => column.notNull())
    .execute()
  await db.schema.createIndex('comments_post_id_created_at_id').on('comments')
    .columns(['post_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('comments_author_id').on('comments').column('author_id').execute()
}
