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
