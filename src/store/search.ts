import { type RawBuilder, sql } from 'kysely'

/**
 * `column` contains `text`, ignoring case, with LIKE's wildcards in `text` taken literally.
 * The same SQL on both dialects (lower() + LIKE … ESCAPE).
 */
export function containsIgnoringCase (column: string, text: string): RawBuilder<boolean> {
  const pattern = `%${text.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`)}%`
  return sql<boolean>`lower(${sql.ref(column)}) like ${pattern} escape '\\'`
}
