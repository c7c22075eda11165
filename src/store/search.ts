import { type RawBuilder, sql } from 'kysely'

/**
 * The LIKE pattern for "contains `text`, ignoring case", with LIKE's wildcards in `text` taken
 * literally; undefined (no search) stays undefined.
 */
export function containsPattern (text: string | undefined): string | undefined {
  return text === undefined ? undefined : `%${text.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`
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
}

export const SEARCH_INDEXES = {
  users: { table: 'users_search', columns: ['name'] },
  posts: { table: 'posts_search', columns: ['title', 'body'] },
  comments: { table: 'comments_search', columns: ['body'] }
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
  return sql<boolean>`rowid in (select rowid from ${table} where ${table} match ${phrase})`
}
