import { type CompiledQuery, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { CursorCodec } from '../collection/cursor.js'
import { type CollectionRequest, queryFingerprint, type SortKey } from '../collection/query.js'
import type { ReadRows } from './prepared.js'
import { containsPattern, matchesIgnoringCase } from './search.js'

export type CollectionResult<Row> =
  | { kind: 'offset', items: Row[], page: number, limit: number, total: number, totalPages: number }
  | { kind: 'cursor', items: Row[], nextCursor: string | null, hasMore: boolean }

/**
 * A collection's filter values. `undefined` leaves a filter out and `null` applies it without a
 * value (e.g. "published posts only" for an anonymous viewer): both change the SQL, so they
 * are part of the query's shape; any other value is bound as a parameter.
 */
export type FilterValues = Record<string, unknown>

/**
 * The resource's FROM with its own filters applied (search and createdAfter, common to every
 * collection, are added by PageQueries). It is called once per query shape, with placeholders
 * in place of the bound values, so it must only hand values to Kysely, never look at them.
 */
export type FilterQuery<Values extends FilterValues> = (values: Values) => SelectQueryBuilder<any, any, object>

/** A bound value's place in a compiled query: replaced by the request's value at each run. */
class Placeholder {
  constructor (readonly name: string) {}
}

/** The compiled queries of one shape: offset pages also count the rows. */
type Shape =
  | { kind: 'offset', page: CompiledQuery<any>, count: CompiledQuery<any> }
  | { kind: 'cursor', page: CompiledQuery<any> }

/** Distinct shapes kept per collection (sort orders × filters × pagination kinds in use). */
const MAX_SHAPES = 256

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
 * One collection's pages. Building and compiling the two Kysely queries of a page cost more
 * than running them on SQLite, so each shape (which filters apply, sort, pagination kind) is
 * built and compiled once, with placeholders for its values, and later pages of that shape
 * only bind values. The queries run through `read` (directly on SQLite, see database.ts).
 * `columns` are selected; they must include every sortable field, for the cursor. A search
 * matches any of `searchIn`, ignoring case.
 */
export class PageQueries<Row extends object, Values extends FilterValues> {
  readonly #shapes = new Map<string, Shape>()

  constructor (
    private readonly filtered: FilterQuery<Values>,
    private readonly columns: readonly string[],
    private readonly cursors: CursorCodec,
    private readonly read: ReadRows,
    private readonly searchIn: readonly string[] = []
  ) {}

  async run (request: CollectionRequest, filters: Values): Promise<CollectionResult<Row>> {
    const { pagination } = request
    // Pagination's values are named with a `$`, which no filter's name has.
    const values: Record<string, unknown> = { ...filters, $search: containsPattern(request.search), $createdAfter: request.createdAfter }
    if (pagination.kind === 'offset') {
      values.$limit = pagination.limit
      values.$offset = (pagination.page - 1) * pagination.limit
    } else {
      values.$limit = pagination.limit + 1
      pagination.after?.forEach((value, index) => { values[`$after${index}`] = value })
    }
    const shape = this.#shape(request, filters)
    const bind = <Result>(query: CompiledQuery<any>) =>
      this.read<Result>({ ...query, parameters: query.parameters.map((parameter) => parameter instanceof Placeholder ? values[parameter.name] : parameter) })

    if (pagination.kind === 'offset' && shape.kind === 'offset') {
      const [items, counted] = await Promise.all([bind<Row>(shape.page), bind<{ total: number | string | bigint }>(shape.count)])
      const total = Number(counted[0]?.total ?? 0)
      const { page, limit } = pagination
      return { kind: 'offset', items, page, limit, total, totalPages: Math.ceil(total / limit) }
    }

    const { limit } = pagination
    const rows = await bind<Row>(shape.page)
    const hasMore = rows.length > limit
    const items = rows.slice(0, limit)
    const last = items.at(-1)
    const nextCursor = hasMore && last !== undefined
      ? this.cursors.encode(queryFingerprint(request), request.sort.map((key) => (last as Record<string, unknown>)[key.field]))
      : null
    return { kind: 'cursor', items, nextCursor, hasMore }
  }

  /** The compiled queries for this request's shape, built on first use. */
  #shape (request: CollectionRequest, filters: Values): Shape {
    const { pagination } = request
    const afterCount = pagination.kind === 'cursor' ? pagination.after?.length ?? 0 : 0
    const filterShape = Object.entries(filters).map(([name, value]) => `${name}${value === undefined ? '-' : value === null ? '0' : '+'}`)
    const search = request.search !== undefined && this.searchIn.length > 0
    const key = `${request.sort.map((sort) => `${sort.descending ? '-' : ''}${sort.field}`).join(',')}|${pagination.kind}${afterCount}|${filterShape.join(',')}` +
      `|${search ? 's' : ''}${request.createdAfter !== undefined ? 'c' : ''}`
    let shape = this.#shapes.get(key)
    if (shape !== undefined) return shape

    const placeholders = Object.fromEntries(Object.entries(filters).map(([name, value]) =>
      [name, value === undefined || value === null ? value : new Placeholder(name)])) as Values
    let filtered = this.filtered(placeholders)
    if (search) {
      const pattern = new Placeholder('$search') as unknown as string
      filtered = filtered.where((eb) => eb.or(this.searchIn.map((column) => matchesIgnoringCase(column, pattern))))
    }
    if (request.createdAfter !== undefined) filtered = filtered.where(sql.ref('created_at'), '>', new Placeholder('$createdAfter'))
    let ordered = filtered.select(this.columns.map((column) => sql.ref(column).as(column)))
    for (const sort of request.sort) ordered = ordered.orderBy(sql.ref(sort.field), sort.descending ? 'desc' : 'asc')
    const limit = new Placeholder('$limit') as unknown as number
    if (pagination.kind === 'offset') {
      shape = {
        kind: 'offset',
        page: ordered.limit(limit).offset(new Placeholder('$offset') as unknown as number).compile(),
        count: filtered.select((eb) => eb.fn.countAll().as('total')).compile()
      }
    } else {
      const bounds = Array.from({ length: afterCount }, (_, index) => new Placeholder(`$after${index}`))
      shape = { kind: 'cursor', page: (afterCount === 0 ? ordered : ordered.where((eb) => after(eb, request.sort, bounds))).limit(limit).compile() }
    }
    if (this.#shapes.size >= MAX_SHAPES) this.#shapes.clear()
    this.#shapes.set(key, shape)
    return shape
  }
}
