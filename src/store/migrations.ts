import { type Kysely, type Migration, Migrator, sql } from 'kysely'
import { uuidv7 } from './ids.js'
import { SEARCH_INDEXES } from './search.js'
import type { Dialect } from './types.js'

/** The tables whose rows collection_counts counts, and the posts' count per status. */
const COUNTED = ['users', 'audit_logs', 'posts'] as const

/**
 * SQLite: row triggers keep collection_counts; trigram FTS5 tables (contentless, deleted from
 * by rowid) hold lower() of the searched columns, the same folding searches compare with
 * (database.ts replaces lower() on the service's connections).
 */
async function collectionsAtScaleSqlite (db: Kysely<any>): Promise<void> {
  for (const table of COUNTED) {
    await sql`insert into collection_counts (name, total) select ${table}, count(*) from ${sql.table(table)}`.execute(db)
    await sql.raw(`create trigger ${table}_count_insert after insert on ${table} begin
      update collection_counts set total = total + 1 where name = '${table}'; end`).execute(db)
    await sql.raw(`create trigger ${table}_count_delete after delete on ${table} begin
      update collection_counts set total = total - 1 where name = '${table}'; end`).execute(db)
  }
  await sql`insert into collection_counts (name, total) select 'posts:' || status, count(*) from posts group by status`.execute(db)
  const status = (row: 'new' | 'old', delta: string) => `insert into collection_counts (name, total) values ('posts:' || ${row}.status, ${delta})
    on conflict (name) do update set total = total + excluded.total;`
  await sql.raw(`create trigger posts_status_count_insert after insert on posts begin ${status('new', '1')} end`).execute(db)
  await sql.raw(`create trigger posts_status_count_delete after delete on posts begin ${status('old', '-1')} end`).execute(db)
  await sql.raw(`create trigger posts_status_count_update after update of status on posts when old.status is not new.status
    begin ${status('old', '-1')} ${status('new', '1')} end`).execute(db)

  for (const [table, { table: index, columns }] of Object.entries(SEARCH_INDEXES)) {
    const list = columns.join(', ')
    const lowered = (row: string) => columns.map((column) => `lower(${row}.${column})`).join(', ')
    await sql.raw(`create virtual table ${index} using fts5(${list}, content='', contentless_delete=1, tokenize='trigram case_sensitive 1')`).execute(db)
    await sql.raw(`insert into ${index} (rowid, ${list}) select rowid, ${columns.map((column) => `lower(${column})`).join(', ')} from ${table}`).execute(db)
    await sql.raw(`create trigger ${index}_insert after insert on ${table} begin
      insert into ${index} (rowid, ${list}) values (new.rowid, ${lowered('new')}); end`).execute(db)
    await sql.raw(`create trigger ${index}_update after update of ${list} on ${table} begin
      delete from ${index} where rowid = old.rowid;
      insert into ${index} (rowid, ${list}) values (new.rowid, ${lowered('new')}); end`).execute(db)
    await sql.raw(`create trigger ${index}_delete after delete on ${table} begin
      delete from ${index} where rowid = old.rowid; end`).execute(db)
  }
}

/**
 * PostgreSQL: statement triggers (one update per statement, however many rows: audit entries
 * are inserted in batches) keep collection_counts; pg_trgm GIN indexes on lower() of the
 * searched columns serve the searches' `lower(column) like '%…%'` as they are.
 */
async function collectionsAtScalePostgres (db: Kysely<any>): Promise<void> {
  for (const table of COUNTED) {
    await sql`insert into collection_counts (name, total) select ${table}, count(*) from ${sql.table(table)}`.execute(db)
  }
  await sql`insert into collection_counts (name, total) select 'posts:' || status, count(*) from posts group by status`.execute(db)
  await sql.raw(`create function collection_count() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then
        update collection_counts set total = total + (select count(*) from inserted) where name = tg_table_name;
      else
        update collection_counts set total = total - (select count(*) from deleted) where name = tg_table_name;
      end if;
      return null;
    end $$`).execute(db)
  // Rows are changed in name order, so that concurrent statements never wait on each other in a cycle.
  const upsert = (changes: string) => `insert into collection_counts as c (name, total)
    select 'posts:' || status, sum(delta) from (${changes}) as changed group by status having sum(delta) <> 0
    order by 1 on conflict (name) do update set total = c.total + excluded.total;`
  await sql.raw(`create function posts_status_count() returns trigger language plpgsql as $$
    begin
      if tg_op = 'INSERT' then ${upsert('select status, 1 as delta from inserted')}
      elsif tg_op = 'DELETE' then ${upsert('select status, -1 as delta from deleted')}
      else ${upsert('select status, 1 as delta from inserted union all select status, -1 from deleted')}
      end if;
      return null;
    end $$`).execute(db)
  for (const table of COUNTED) {
    await sql.raw(`create trigger ${table}_count_insert after insert on ${table}
      referencing new table as inserted for each statement execute function collection_count()`).execute(db)
    await sql.raw(`create trigger ${table}_count_delete after delete on ${table}
      referencing old table as deleted for each statement execute function collection_count()`).execute(db)
  }
  await sql.raw(`create trigger posts_status_count_insert after insert on posts
    referencing new table as inserted for each statement execute function posts_status_count()`).execute(db)
  await sql.raw(`create trigger posts_status_count_delete after delete on posts
    referencing old table as deleted for each statement execute function posts_status_count()`).execute(db)
  await sql.raw(`create trigger posts_status_count_update after update on posts
    referencing old table as deleted new table as inserted for each statement execute function posts_status_count()`).execute(db)

  // In public when first created, so that dropping one schema of several never takes it along.
  await sql`create extension if not exists pg_trgm schema public`.execute(db)
  const { rows } = await sql<{ schema: string }>`select n.nspname as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'`.execute(db)
  const operators = sql.raw(`${sql.id(rows[0]?.schema ?? 'public').compile(db).sql}.gin_trgm_ops`)
  for (const [table, { columns }] of Object.entries(SEARCH_INDEXES)) {
    for (const column of columns) {
      await sql`create index ${sql.id(`${table}_${column}_trigram`)} on ${sql.table(table)} using gin (lower(${sql.ref(column)}) ${operators})`.execute(db)
    }
  }
}

/**
 * The one set of migrations for both databases. Column types differ only where the
 * dialects do: timestamps are `timestamptz` on PostgreSQL and ISO 8601 text on SQLite.
 * Migrations are append-only: never edit one that has shipped.
 */
function migrations (dialect: Dialect): Record<string, Migration> {
  const timestamp = dialect === 'postgres' ? sql`timestamptz` : sql`text`
  return {
    '0001_users_roles_refresh_tokens': {
      async up (db: Kysely<any>) {
        await db.schema.createTable('users')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('email', 'text', (column) => column.notNull().unique())
          .addColumn('name', 'text', (column) => column.notNull())
          .addColumn('password_hash', 'text')
          .addColumn('totp_enabled_at', timestamp)
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('updated_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('users_created_at_id').on('users').columns(['created_at', 'id']).execute()
        await db.schema.createIndex('users_name_id').on('users').columns(['name', 'id']).execute()

        await db.schema.createTable('user_roles')
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('role', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addPrimaryKeyConstraint('user_roles_pk', ['user_id', 'role'])
          .execute()

        await db.schema.createTable('refresh_tokens')
          .addColumn('jti', 'text', (column) => column.primaryKey())
          .addColumn('session_id', 'text', (column) => column.notNull())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('token_hash', 'text', (column) => column.notNull().unique())
          .addColumn('device', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .addColumn('spent_at', timestamp)
          .addColumn('revoked_at', timestamp)
          .execute()
        await db.schema.createIndex('refresh_tokens_user_id').on('refresh_tokens').column('user_id').execute()
        await db.schema.createIndex('refresh_tokens_session_id').on('refresh_tokens').column('session_id').execute()
      }
    },
    '0002_sessions_revocations_sign_in_failures': {
      async up (db: Kysely<any>) {
        await db.schema.createTable('sessions')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('device', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('last_used_at', timestamp, (column) => column.notNull())
          .addColumn('revoked_at', timestamp)
          .addColumn('revoked_reason', 'text')
          .execute()
        await db.schema.createIndex('sessions_user_id_created_at').on('sessions').columns(['user_id', 'created_at', 'id']).execute()

        // The access token issued with each refresh token, so logout finds its session.
        await db.schema.alterTable('refresh_tokens').addColumn('access_jti', 'text').execute()
        await db.schema.createIndex('refresh_tokens_access_jti').on('refresh_tokens').column('access_jti').execute()

        await db.schema.createTable('revoked_tokens')
          .addColumn('jti', 'text', (column) => column.primaryKey())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('revoked_tokens_created_at').on('revoked_tokens').column('created_at').execute()
        await db.schema.createIndex('revoked_tokens_expires_at').on('revoked_tokens').column('expires_at').execute()

        await db.schema.createTable('sign_in_failures')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('ip', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('sign_in_failures_user_id_created_at').on('sign_in_failures').columns(['user_id', 'created_at']).execute()

        await db.schema.createTable('lockouts')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          // null: the account is locked for every address.
          .addColumn('ip', 'text')
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('locked_until', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('lockouts_user_id_locked_until').on('lockouts').columns(['user_id', 'locked_until']).execute()
      }
    },
    '0003_audit_logs_trusted_devices': {
      async up (db: Kysely<any>) {
        await db.schema.createTable('audit_logs')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('event', 'text', (column) => column.notNull())
          .addColumn('actor_id', 'text')
          .addColumn('target_id', 'text')
          .addColumn('ip', 'text')
          .addColumn('user_agent', 'text')
          .addColumn('outcome', 'text', (column) => column.notNull())
          .addColumn('details', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('audit_logs_created_at_id').on('audit_logs').columns(['created_at', 'id']).execute()
        await db.schema.createIndex('audit_logs_event_created_at').on('audit_logs').columns(['event', 'created_at']).execute()
        await db.schema.createIndex('audit_logs_actor_id_created_at').on('audit_logs').columns(['actor_id', 'created_at']).execute()

        await db.schema.createTable('trusted_devices')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('device_id', 'text', (column) => column.notNull())
          .addColumn('name', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addUniqueConstraint('trusted_devices_user_device', ['user_id', 'device_id'])
          .execute()
        await db.schema.createIndex('trusted_devices_user_id_created_at').on('trusted_devices').columns(['user_id', 'created_at', 'id']).execute()
      }
    },
    '0004_mfa': {
      async up (db: Kysely<any>) {
        // Sealed (encrypted) TOTP secrets: the enabled one and one awaiting its first code.
        await db.schema.alterTable('users').addColumn('totp_secret', 'text').execute()
        await db.schema.alterTable('users').addColumn('totp_pending_secret', 'text').execute()
        // The last accepted time step: codes of it or earlier are refused (replay).
        await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute()

        await db.schema.createTable('mfa_backup_codes')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('code_hash', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('mfa_backup_codes_user_id').on('mfa_backup_codes').column('user_id').execute()
      }
    },
    '0005_oauth': {
      async up (db: Kysely<any>) {
        await db.schema.createTable('user_identities')
          .addColumn('provider', 'text', (column) => column.notNull())
          .addColumn('subject', 'text', (column) => column.notNull())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('email', 'text')
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addPrimaryKeyConstraint('user_identities_pk', ['provider', 'subject'])
          .execute()
        await db.schema.createIndex('user_identities_user_id').on('user_identities').column('user_id').execute()

        // Used when REDIS_URL is unset: OAuth state, stored by its hash, single use.
        await db.schema.createTable('oauth_states')
          .addColumn('state_hash', 'text', (column) => column.primaryKey())
          .addColumn('provider', 'text', (column) => column.notNull())
          .addColumn('code_verifier', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('oauth_states_expires_at').on('oauth_states').column('expires_at').execute()
      }
    },
    '0006_posts_comments': {
      async up (db: Kysely<any>) {
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
        await db.schema.createIndex('posts_status_created_at_id').on('posts').columns(['status', 'created_at', 'id']).execute()
        await db.schema.createIndex('posts_author_id_created_at_id').on('posts').columns(['author_id', 'created_at', 'id']).execute()
        await db.schema.createIndex('posts_created_at_id').on('posts').columns(['created_at', 'id']).execute()

        await db.schema.createTable('comments')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('post_id', 'text', (column) => column.notNull().references('posts.id').onDelete('cascade'))
          .addColumn('author_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('body', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('comments_post_id_created_at_id').on('comments').columns(['post_id', 'created_at', 'id']).execute()
        await db.schema.createIndex('comments_author_id').on('comments').column('author_id').execute()
      }
    },
    '0007_sign_in_failures_cleared': {
      async up (db: Kysely<any>) {
        // A successful sign-in marks its address's failures cleared (for the lockout) rather
        // than deleting them: the anomaly detector still counts them.
        await db.schema.alterTable('sign_in_failures').addColumn('cleared_at', timestamp).execute()
      }
    },
    '0008_sessions_live_index': {
      async up (db: Kysely<any>) {
        // Every sign-in reads the account's live sessions (the concurrency limit). The index on
        // (user_id, created_at, id) stays, for cascades and the reuse count, but reaches the
        // live ones only past every session ended within the absolute timeout: an account that
        // signs in often (a script, a kiosk) piles those up. Built inside the migration's
        // transaction: on a large existing table, writes to sessions wait for it.
        await db.schema.createIndex('sessions_user_id_live').on('sessions').columns(['user_id', 'created_at', 'id'])
          .where(sql.ref('revoked_at'), 'is', null).execute()
      }
    },
    '0009_email_recovery_message_factors': {
      async up (db: Kysely<any>) {
        // 0 or 1 on both databases (SQLite has no boolean): the response schema makes it true or false.
        await db.schema.alterTable('users').addColumn('email_verified', 'integer', (column) => column.notNull().defaultTo(0)).execute()
        await db.schema.alterTable('users').addColumn('phone', 'text').execute()
        await db.schema.alterTable('users').addColumn('mfa_email_enabled_at', timestamp).execute()
        await db.schema.alterTable('users').addColumn('mfa_sms_enabled_at', timestamp).execute()

        // E-mail verification and password reset tokens, by the SHA-256 of the token only.
        await db.schema.createTable('one_time_tokens')
          .addColumn('token_hash', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('purpose', 'text', (column) => column.notNull())
          // The address a verification token verifies: a token sent before an e-mail change verifies nothing after it.
          .addColumn('email', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .addColumn('used_at', timestamp)
          .execute()
        await db.schema.createIndex('one_time_tokens_user_id_purpose_created_at').on('one_time_tokens').columns(['user_id', 'purpose', 'created_at']).execute()

        // Messages waiting to be delivered (mail, SMS); a row leaves once delivered or given up.
        await db.schema.createTable('outbox')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('channel', 'text', (column) => column.notNull())
          .addColumn('recipient', 'text', (column) => column.notNull())
          .addColumn('subject', 'text', (column) => column.notNull())
          .addColumn('text_body', 'text', (column) => column.notNull())
          .addColumn('html_body', 'text')
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('attempts', 'integer', (column) => column.notNull().defaultTo(0))
          .addColumn('next_attempt_at', timestamp, (column) => column.notNull())
          // Set while one instance is delivering the row, so no other sends it at the same time.
          .addColumn('claimed_until', timestamp)
          .addColumn('last_error', 'text')
          .execute()
        await db.schema.createIndex('outbox_next_attempt_at').on('outbox').columns(['next_attempt_at', 'id']).execute()

        // Sign-in codes sent by e-mail or SMS for one MFA challenge (its token's jti).
        await db.schema.createTable('mfa_message_codes')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('challenge_jti', 'text', (column) => column.notNull())
          .addColumn('method', 'text', (column) => column.notNull())
          .addColumn('code_hash', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .addColumn('used_at', timestamp)
          .execute()
        await db.schema.createIndex('mfa_message_codes_user_id_challenge_jti').on('mfa_message_codes').columns(['user_id', 'challenge_jti']).execute()
      }
    },
    '0010_collections_at_scale': {
      async up (db: Kysely<any>) {
        // Exact totals of unfiltered collections without counting (docs/api.md, "Collections").
        await db.schema.createTable('collection_counts')
          .addColumn('name', 'text', (column) => column.primaryKey())
          .addColumn('total', 'bigint', (column) => column.notNull())
          .execute()
        if (dialect === 'sqlite') await collectionsAtScaleSqlite(db)
        else await collectionsAtScalePostgres(db)
      }
    },
    '0011_refresh_retries': {
      async up (db: Kysely<any>) {
        // The session's last rotation, for a retry of its spent token within
        // REFRESH_RETRY_WINDOW_S: that token's jti, the pair it was rotated into (sealed), and
        // until when. Each rotation overwrites it, so it names a token whose successor is unspent.
        await db.schema.alterTable('sessions').addColumn('retry_jti', 'text').execute()
        await db.schema.alterTable('sessions').addColumn('retry_pair', 'text').execute()
        await db.schema.alterTable('sessions').addColumn('retry_until', timestamp).execute()
        // The pairs past their window, for erasing: few rows at any time.
        await db.schema.createIndex('sessions_retry_until').on('sessions').column('retry_until')
          .where(sql.ref('retry_until'), 'is not', null).execute()
      }
    },
    '0012_oauth_browser_sign_in': {
      async up (db: Kysely<any>) {
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
        await db.schema.createIndex('oauth_exchange_codes_expires_at').on('oauth_exchange_codes').column('expires_at').execute()
        await db.schema.createIndex('oauth_exchange_codes_user_id').on('oauth_exchange_codes').column('user_id').execute()
      }
    },
    '0013_passkeys': {
      async up (db: Kysely<any>) {
        // A user's passkeys (docs/api.md, "Passkeys"): the credential id and COSE public key as
        // base64url text, and the signature counter, which must only go up.
        await db.schema.createTable('passkeys')
          .addColumn('id', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text', (column) => column.notNull().references('users.id').onDelete('cascade'))
          .addColumn('credential_id', 'text', (column) => column.notNull().unique())
          .addColumn('public_key', 'text', (column) => column.notNull())
          .addColumn('counter', 'bigint', (column) => column.notNull())
          .addColumn('transports', 'text', (column) => column.notNull())
          .addColumn('name', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('last_used_at', timestamp)
          .execute()
        await db.schema.createIndex('passkeys_user_id_created_at_id').on('passkeys').columns(['user_id', 'created_at', 'id']).execute()

        // Ceremony challenges without Redis: single use, by the SHA-256 of their key.
        await db.schema.createTable('passkey_challenges')
          .addColumn('key_hash', 'text', (column) => column.primaryKey())
          .addColumn('user_id', 'text')
          .addColumn('challenge', 'text', (column) => column.notNull())
          .addColumn('created_at', timestamp, (column) => column.notNull())
          .addColumn('expires_at', timestamp, (column) => column.notNull())
          .execute()
        await db.schema.createIndex('passkey_challenges_expires_at').on('passkey_challenges').column('expires_at').execute()
      }
    },
    '0014_account_assurance': {
      async up (db: Kysely<any>) {
        // When the address was first proved (docs/security.md, "Account claiming"): null while the
        // account is unclaimed. Accounts verified before this migration count as claimed then.
        await db.schema.alterTable('users').addColumn('claimed_at', timestamp).execute()
        await db.updateTable('users').set({ claimed_at: sql.ref('updated_at') }).where('email_verified', '=', 1).execute()
        // Raised by a new password and by a claim: MFA challenges issued before it are refused.
        await db.schema.alterTable('users').addColumn('credentials_version', 'integer', (column) => column.notNull().defaultTo(0)).execute()
        // How the session's sign-in was proved (the access tokens' auth_time and amr), and until
        // when a step-up (POST /auth/reauthenticate) lets it make sensitive changes.
        await db.schema.alterTable('sessions').addColumn('auth_time', timestamp).execute()
        await db.schema.alterTable('sessions').addColumn('amr', 'text').execute()
        await db.schema.alterTable('sessions').addColumn('reauthenticated_until', timestamp).execute()
      }
    }
  }
}

/** Brings the schema to the latest version; throws with the failing migration's error. */
export async function migrateToLatest (db: Kysely<any>, dialect: Dialect): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema; name the one in use, so a
  // database holding several copies of the service's tables (one per schema) works.
  const schema = dialect === 'postgres'
    ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
    : undefined
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations(dialect) },
    ...(schema !== undefined && { migrationTableSchema: schema })
  })
  const { error, results = [] } = await migrator.migrateToLatest()
  if (error !== undefined) throw error instanceof Error ? error : new Error(String(error))
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}
