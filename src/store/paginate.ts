import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { CursorCodec } from '../collection/cursor.js'
import { type CollectionRequest, queryFingerprint, type SortKey } from '../collection/query.js'
import type { ReadRows } from './prepared.js'

export type CollectionResult<Row> =
  | { kind: 'offset', items: Row[], page: number, limit: number, total: number, totalPages: number }
  | { kind: 'cursor', items: Row[], nextCursor: string | null, hasMore: boolean }

/**
 * Rows strictly after `values` in the order of `keys`. One direction throughout becomes a
 * row-value comparison, which both databases answer from a composite index; mixed
 * directions expand to (a > x) OR (a = x AND b < y) OR ….
 */
function after (eb: ExpressionBuilder<any, any>, keys: SortKey[], values: unknown[]): Expression<SqlBool> {
  const descending = keys[0]?.descending ?? false
  if (keys.every((key) => key.descending === descending)) {
    const columns = sql.join(keys.map((key) => sql.ref(key.field)))
    const bound = sql.join(values.map((value) => sql.val(value)))
    return sql<SqlBool>`(${columns}) ${sql.raw(descending ? '<' : '>')} (${bound})`
  }
  return eb.or(keys.map((key, index) => eb.and([
    ...keys.slice(0, index).map((previous, j) => eb(sql.ref(previous.field), '=', values[j])),
    eb(sql.ref(key.field), key.descending ? '<' : '>', values[index])
  ])))
}

/**
 * Runs one page of a collection: `filtered` is the resource's FROM with its filters applied;
 * `columns` are selected (they must include every sortable field, for the cursor). The
 * queries run through `read` (directly on SQLite, see database.ts).
 */
export async function paginate<Row extends object> (
  filtered: SelectQueryBuilder<any, any, object>,
  columns: readonly string[],
  request: CollectionRequest,
  cursors: CursorCodec,
  read: ReadRows
): Promise<CollectionResult<Row>> {
  let ordered = filtered.select(columns.map((column) => sql.ref(column).as(column))) as SelectQueryBuilder<any, any, Row>
  for (const key of request.sort) ordered = ordered.orderBy(sql.ref(key.field), key.descending ? 'desc' : 'asc')
  const { pagination } = request

  if (pagination.kind === 'offset') {
    const { page, limit } = pagination
    const [items, counted] = await Promise.all([
      read(ordered.limit(limit).offset((page - 1) * limit).compile()),
      read(filtered.select((eb) => eb.fn.countAll<number | string | bigint>().as('total')).compile())
    ])
    const total = Number(counted[0]?.total ?? 0)
    return { kind: 'offset', items, page, limit, total, totalPages: Math.ceil(total / limit) }
  }

  const { limit } = pagination
  const paged = pagination.after === null ? ordered : ordered.where((eb) => after(eb, request.sort, pagination.after ?? []))
  const rows = await read(paged.limit(limit + 1).compile())
  const hasMore = rows.length > limit
  const items = rows.slice(0, limit)
  const last = items.at(-1)
  const nextCursor = hasMore && last !== undefined
    ? cursors.encode(queryFingerprint(request), request.sort.map((key) => (last as Record<string, unknown>)[key.field]))
    : null
  return { kind: 'cursor', items, nextCursor, hasMore }
}
