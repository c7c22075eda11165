import { type RawBuilder, sql } from 'kysely'

/**
 * The LIKE pattern for "contains `text`, ignoring case", with LIKE's wildcards in `text` taken
 * literally; undefined (no search) stays undefined.
 */
export function containsPattern (text: string | undefined): string | undefined {
  return text === undefined ? undefined : `%${likeLiteral(text)}%`
}

/** The LIKE pattern for "starts with `text`, ignoring case", as containsPattern. */
export function startsWithPattern (text: string): string {
  return `${likeLiteral(text)}%`
}

function likeLiteral (text: string): string {
  return text.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)
}

/**
 * `column` matches a pattern from containsPattern: the same SQL on both dialects (lower() +
 * LIKE … ESCAPE); on SQLite lower() is replaced to fold all of Unicode, as PostgreSQL's does (database.ts).
 */
export function matchesIgnoringCase (column: string, pattern: string): RawBuilder<boolean> {
  return sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`
}

/**
 * A SQLite FTS5 table with the trigram tokenizer (migrations/0010-collections-at-scale.ts) over lower() of a table's
 * searched columns, kept by triggers; its rowid is the table's. On PostgreSQL the same search
 * is served by pg_trgm GIN indexes on lower(column), with no change to the SQL.
 */
export interface SearchIndex {
  /** The FTS5 table. */
  table: string
  /**
   * When the searched rows are not the indexed table's own: the indexed table, and the column of
   * the searched rows holding its `id`.
   */
  of?: { table: string, key: string }
}

/** Made by migrations/0010-collections-at-scale.ts, each table with its own rows. */
export const SEARCH_INDEXES = {
  users: { table: 'users_search', columns: ['name'] },
  posts: { table: 'posts_search', columns: ['title', 'body'] },
  comments: { table: 'comments_search', columns: ['body'] }
} as const

/**
 * The users' addresses and names, as a member search matches them, from the memberships joined
 * with their users (migrations/0025-members-search-index.ts).
 */
export const MEMBER_SEARCH_INDEX = {
  table: 'users_member_search', columns: ['email', 'name'], of: { table: 'users', key: 'id' }
} as const

/** Characters a trigram index needs in a search to use it: shorter ones scan. */
const TRIGRAM = 3

/**
 * The FTS5 query for "contains `text`" over lowered columns: one phrase, quoted so that no
 * character is taken as query syntax; undefined when the search is too short for trigrams
 * (counted in code points after folding, as the tokenizer counts them).
 */
export function searchPhrase (text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const folded = text.toLowerCase()
  if ([...folded].length < TRIGRAM) return undefined
  return `"${folded.replaceAll('"', '""')}"`
}

/** The rows whose indexed columns contain the phrase from searchPhrase (SQLite only). */
export function indexedSearch (index: SearchIndex, phrase: string): RawBuilder<boolean> {
  const table = sql.table(index.table)
  const matches = sql`select rowid from ${table} where ${table} match ${phrase}`
  if (index.of === undefined) return sql<boolean>`rowid in (${matches})`
  // From the matches to the searched rows by key: the database then starts from the few matches.
  return sql<boolean>`${sql.ref(index.of.key)} in (select id from ${sql.table(index.of.table)} where rowid in (${matches}))`
}
