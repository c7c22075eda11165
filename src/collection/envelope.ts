import type { CollectionResult } from '../store/paginate.js'

/** Keeps `id` and the requested fields; the response schema then serializes only those. */
function project<Row extends { id: string }> (row: Row, fields: string[] | null): Partial<Row> & { id: string } {
  if (fields === null) return row
  const projected: Record<string, unknown> = { id: row.id }
  for (const field of fields) projected[field] = row[field as keyof Row]
  return projected as Partial<Row> & { id: string }
}

/** Spec 2.3 / 2.4: the collection envelope for a page of rows. */
export function collectionEnvelope<Row extends { id: string }> (result: CollectionResult<Row>, fields: string[] | null) {
  const data = result.items.map((row) => project(row, fields))
  if (result.kind === 'cursor') return { data, meta: { nextCursor: result.nextCursor, hasMore: result.hasMore } }
  const { page, limit, total, totalPages } = result
  return { data, meta: { page, limit, total, totalPages } }
}
