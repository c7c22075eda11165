import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'

export const name = '0025_members_search_index'

/**
 * SQLite: a trigram FTS5 table over the users' lowered addresses and names, as
 * users_search (migration 0010) is over names alone, kept by the same kind of triggers. An
 * organization's member search matches both, and without it compared up to 10,000 members
 * with every search, however rare the term: 45 ms at 100,000 members (docs/performance.md,
 * "Scale"). PostgreSQL's member search has its trigram indexes already (migration 0015).
 */
export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  if (dialect !== 'sqlite') return
  const options = "content='', contentless_delete=1, tokenize='trigram case_sensitive 1'"
  await sql.raw(`create virtual table users_member_search using fts5(email, name, ${options})`).execute(db)
  await sql`insert into users_member_search (rowid, email, name) select rowid, lower(email), lower(name) from users`.execute(db)
  await sql.raw(`create trigger users_member_search_insert after insert on users begin
    insert into users_member_search (rowid, email, name) values (new.rowid, lower(new.email), lower(new.name)); end`).execute(db)
  await sql.raw(`create trigger users_member_search_update after update of email, name on users begin
    delete from users_member_search where rowid = old.rowid;
    insert into users_member_search (rowid, email, name) values (new.rowid, lower(new.email), lower(new.name)); end`).execute(db)
  await sql.raw(`create trigger users_member_search_delete after delete on users begin
    delete from users_member_search where rowid = old.rowid; end`).execute(db)
}
