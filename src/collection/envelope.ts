import type { CollectionResult } from '../store/paginate.js'
import type { CursorCodec } from './cursor.js'
import { type CollectionOptions, type CollectionQueryInput, type CollectionRequest, parseCollectionQuery } from './query.js'

/** Keeps `id` and the requested fields; the response schema then serializes only those. */
function project<Row extends { id: string }> (row: Row, fields: string[] | null): Partial<Row> & { id: string } {
  if (fields === null) return row
  const projected: Record<string, unknown> = { id: row.id }
  for (const field of fields) projected[field] = row[field as keyof Row]
  return projected as Partial<Row> & { id: string }
}

/** The collection envelope for a page of rows (docs/api.md, "Collections"). */
export function collectionEnvelope<Row extends { id: string }> (
  result: CollectionResult<Row>,
  fields: string[] | null
) {
  const data = result.items.map((row) => project(row, fields))
  if (result.kind === 'cursor') return { data, meta: { kind: result.kind, nextCursor: result.nextCursor, hasMore: result.hasMore } }
  const { kind, page, limit, total, totalExact, totalPages } = result
  return { data, meta: { kind, page, limit, total, totalExact, totalPages } }
}

/** Parses a collection's query (throwing 400 on a bad one), reads that page with `read`, and answers its envelope. */
export async function collectionPage<Row extends { id: string }> (
  query: CollectionQueryInput,
  options: CollectionOptions,
  cursors: CursorCodec,
  read: (request: CollectionRequest) => Promise<CollectionResult<Row>>,
  filters: Record<string, string> = {}
) {
  const request = parseCollectionQuery(query, options, cursors, filters)
  return collectionEnvelope(await read(request), request.fields)
}
