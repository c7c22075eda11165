import { type Kysely, sql } from 'kysely'
import { SEARCH_INDEXES } from '../search.js'
import type { Dialect } from '../types.js'

export const name = '0010_collections_at_scale'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  // Exact totals of unfiltered collections without counting (docs/api.md, "Collections").
  await db.schema.createTable('collection_counts')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('total', 'bigint', (column) => column.notNull())
    .execute()
  if (dialect === 'sqlite') await collectionsAtScaleSqlite(db)
  else await collectionsAtScalePostgres(db)
}

/** The tables whose rows collection_counts counts, and the posts' count per status. */
const COUNTED = ['users', 'audit_logs', 'posts'] as const

/**
 * SQLite: row triggers keep collection_counts; trigram FTS5 tables (contentless, deleted from
 * by rowid) hold lower() of the searched columns, the same folding searches compare with
 * (database.ts replaces lower() on the service's connections).
 */
async function collectionsAtScaleSqlite (db: Kysely<any>): Promise<void> {
  for (const table of COUNTED) {
    await sql`insert into collection_counts (name, total) select ${table}, count(*) from ${sql.table(table)}`
      .execute(db)
    await sql.raw(`create trigger ${table}_count_insert after insert on ${table} begin
      update collection_counts set total = total + 1 where name = '${table}'; end`).execute(db)
    await sql.raw(`create trigger ${table}_count_delete after delete on ${table} begin
      update collection_counts set total = total - 1 where name = '${table}'; end`).execute(db)
  }
  await sql`insert into collection_counts (name, total) select 'posts:' || status, count(*) from posts group by status`
    .execute(db)
  const status = (row: 'new' | 'old', delta: string) =>
    `insert into collection_counts (name, total) values ('posts:' || ${row}.status, ${delta})
    on conflict (name) do update set total = total + excluded.total;`
  await sql.raw(`create trigger posts_status_count_insert after insert on posts begin ${status('new', '1')} end`)
    .execute(db)
  await sql.raw(`create trigger posts_status_count_delete after delete on posts begin ${status('old', '-1')} end`)
    .execute(db)
  await sql.raw('create trigger posts_status_count_update after update of status on posts ' +
    `when old.status is not new.status
    begin ${status('old', '-1')} ${status('new', '1')} end`).execute(db)

  for (const [table, { table: index, columns }] of Object.entries(SEARCH_INDEXES)) {
    const list = columns.join(', ')
    const lowered = (row: string) => columns.map((column) => `lower(${row}.${column})`).join(', ')
    const options = "content='', contentless_delete=1, tokenize='trigram case_sensitive 1'"
    await sql.raw(`create virtual table ${index} using fts5(${list}, ${options})`).execute(db)
    const folded = columns.map((column) => `lower(${column})`).join(', ')
    await sql.raw(`insert into ${index} (rowid, ${list}) select rowid, ${folded} from ${table}`).execute(db)
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
    await sql`insert into collection_counts (name, total) select ${table}, count(*) from ${sql.table(table)}`
      .execute(db)
  }
  await sql`insert into collection_counts (name, total) select 'posts:' || status, count(*) from posts group by status`
    .execute(db)
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
    referencing old table as deleted new table as inserted for each statement execute function posts_status_count()`)
    .execute(db)

  // In public when first created, so that dropping one schema of several never takes it along.
  await sql`create extension if not exists pg_trgm schema public`.execute(db)
  const extension = 'select n.nspname as schema from pg_extension e ' +
    "join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'"
  const { rows } = await sql.raw<{ schema: string }>(extension).execute(db)
  const operators = sql.raw(`${sql.id(rows[0]?.schema ?? 'public').compile(db).sql}.gin_trgm_ops`)
  for (const [table, { columns }] of Object.entries(SEARCH_INDEXES)) {
    for (const column of columns) {
      const trigram = sql.id(`${table}_${column}_trigram`)
      await sql`create index ${trigram} on ${sql.table(table)} using gin (lower(${sql.ref(column)}) ${operators})`
        .execute(db)
    }
  }
}
