import { type RawBuilder, type SelectQueryBuilder, sql } from 'kysely'

/**
 * The LIKE pattern for "contains `text`, ignoring case", with LIKE's wildcards in `text` taken
 * literally; undefined (no search) stays undefined.
 */
export function containsPattern (text: string | undefined): string | undefined {
  return text === undefined ? undefined : `%${text.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`
}

/** `column` matches a pattern from containsPattern: the same SQL on both dialects (lower() + LIKE … ESCAPE). */
export function matchesIgnoringCase (column: string, pattern: string): RawBuilder<boolean> {
  return sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`
}

/**
 * The filters most collections share: a search over `column` (a pattern from containsPattern)
 * and a strict lower bound on creation time; each left out when undefined.
 */
export function withSearchAndCreatedAfter<Query extends SelectQueryBuilder<any, any, object>> (
  query: Query, column: string, search: string | undefined, createdAfter: string | undefined
): Query {
  let filtered = query
  if (search !== undefined) filtered = filtered.where(matchesIgnoringCase(column, search)) as Query
  if (createdAfter !== undefined) filtered = filtered.where(sql.ref('created_at'), '>', createdAfter) as Query
  return filtered
}
