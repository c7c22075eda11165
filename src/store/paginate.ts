import { type CompiledQuery, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { CursorCodec } from '../collection/cursor.js'
import { type CollectionRequest, COUNT_LIMIT, queryFingerprint, type SortKey } from '../collection/query.js'
import type { ReadRows } from './prepared.js'
import { containsPattern, indexedSearch, matchesIgnoringCase, type SearchIndex, searchPhrase } from './search.js'
import type { Db, Dialect } from './types.js'

export type CollectionResult<Row> =
  | { kind: 'offset', items: Row[], page: number, limit: number, total: number, totalExact: boolean, totalPages: number }
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

/** What a collection's queries run on. */
export interface PageStore {
  db: Db
  dialect: Dialect
  cursors: CursorCodec
  read: ReadRows
}

export interface PageOptions<Values extends FilterValues> {
  /** Columns a search matches, ignoring case. */
  searchIn?: readonly string[]
  /** The trigram index over `searchIn` (migrations.ts), used for searches of 3 characters or more. */
  searchIndex?: SearchIndex
  /**
   * The collection_counts row holding the exact number of rows these filter values select, when
   * one is maintained for them (migrations.ts); undefined: the rows are counted, up to COUNT_LIMIT.
   * The key is bound as a value; whether there is one is part of the query's shape.
   */
  maintainedCount?: (values: Values) => string | undefined
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
  /** Counts a search's trigram-index matches, up to COUNT_LIMIT + 1 (SQLite). */
  #probe: CompiledQuery<any> | undefined

  readonly #searchIn: readonly string[]

  constructor (
    private readonly filtered: FilterQuery<Values>,
    private readonly columns: readonly string[],
    private readonly store: PageStore,
    private readonly options: PageOptions<Values> = {}
  ) {
    this.#searchIn = options.searchIn ?? []
  }

  async run (request: CollectionRequest, filters: Values): Promise<CollectionResult<Row>> {
    const { pagination } = request
    const countKey = this.#countKey(request, filters)
    // Pagination's values are named with a `$`, which no filter's name has.
    const values: Record<string, unknown> = {
      ...filters,
      $search: containsPattern(request.search),
      $phrase: searchPhrase(request.search),
      $createdAfter: request.createdAfter,
      $countKey: countKey,
      $countLimit: COUNT_LIMIT + 1
    }
    if (pagination.kind === 'offset') {
      values.$limit = pagination.limit
      values.$offset = (pagination.page - 1) * pagination.limit
    } else {
      values.$limit = pagination.limit + 1
      pagination.after?.forEach((value, index) => { values[`$after${index}`] = value })
    }
    const shape = this.#shape(request, filters, countKey !== undefined, this.#useIndex(request.search))
    const bind = <Result>(query: CompiledQuery<any>) =>
      this.store.read<Result>({ ...query, parameters: query.parameters.map((parameter) => parameter instanceof Placeholder ? values[parameter.name] : parameter) })

    if (pagination.kind === 'offset' && shape.kind === 'offset') {
      const [items, counted] = await Promise.all([bind<Row>(shape.page), bind<{ total: number | string | bigint }>(shape.count)])
      const counts = Number(counted[0]?.total ?? 0)
      // A maintained count is exact however large; a counted one stops past COUNT_LIMIT.
      const totalExact = countKey !== undefined || counts <= COUNT_LIMIT
      const total = totalExact ? counts : COUNT_LIMIT
      const { page, limit } = pagination
      return { kind: 'offset', items, page, limit, total, totalExact, totalPages: Math.ceil(total / limit) }
    }

    const { limit } = pagination
    const rows = await bind<Row>(shape.page)
    const hasMore = rows.length > limit
    const items = rows.slice(0, limit)
    const last = items.at(-1)
    const nextCursor = hasMore && last !== undefined
      ? this.store.cursors.encode(queryFingerprint(request), request.sort.map((key) => (last as Record<string, unknown>)[key.field]))
      : null
    return { kind: 'cursor', items, nextCursor, hasMore }
  }

  /**
   * Whether a search reads the trigram index (SQLite). The index answers which rows match, not
   * in the page's order: its matches are read whole and sorted, which is cheap while they are
   * few. A search matching more than COUNT_LIMIT rows reads the collection in its order instead,
   * checking each row: with that many matches the page fills quickly. The probe itself reads at
   * most COUNT_LIMIT + 1 index entries.
   */
  #useIndex (search: string | undefined): boolean {
    const index = this.options.searchIndex
    const phrase = searchPhrase(search)
    if (this.store.dialect !== 'sqlite' || index === undefined || phrase === undefined) return false
    this.#probe ??= this.store.db.selectFrom(sql<{ rowid: number }>`(select rowid from ${sql.table(index.table)} where ${sql.table(index.table)} match ${new Placeholder('$phrase')} limit ${new Placeholder('$countLimit')})`.as('matches'))
      .select((eb) => eb.fn.countAll().as('total')).compile()
    const probe = this.#probe
    const matches = this.store.read<{ total: number }>({ ...probe, parameters: [phrase, COUNT_LIMIT + 1] })
    if (matches instanceof Promise) return false
    return Number(matches[0]?.total ?? 0) <= COUNT_LIMIT
  }

  /** The maintained count serving this request, if any: only without search and createdAfter. */
  #countKey (request: CollectionRequest, filters: Values): string | undefined {
    if (request.pagination.kind !== 'offset' || request.search !== undefined || request.createdAfter !== undefined) return undefined
    return this.options.maintainedCount?.(filters)
  }

  /** The compiled queries for this request's shape, built on first use. */
  #shape (request: CollectionRequest, filters: Values, maintained: boolean, indexed: boolean): Shape {
    const { pagination } = request
    const afterCount = pagination.kind === 'cursor' ? pagination.after?.length ?? 0 : 0
    const filterShape = Object.entries(filters).map(([name, value]) => `${name}${value === undefined ? '-' : value === null ? '0' : '+'}`)
    const search = request.search !== undefined && this.#searchIn.length > 0
    const key = `${request.sort.map((sort) => `${sort.descending ? '-' : ''}${sort.field}`).join(',')}|${pagination.kind}${afterCount}|${filterShape.join(',')}` +
      `|${search ? 's' : ''}${indexed ? 'i' : ''}${request.createdAfter !== undefined ? 'c' : ''}${maintained ? 'm' : ''}`
    let shape = this.#shapes.get(key)
    if (shape !== undefined) return shape

    const placeholders = Object.fromEntries(Object.entries(filters).map(([name, value]) =>
      [name, value === undefined || value === null ? value : new Placeholder(name)])) as Values
    let filtered = this.filtered(placeholders)
    if (search) {
      const pattern = new Placeholder('$search') as unknown as string
      if (indexed && this.options.searchIndex !== undefined) {
        // SQLite's trigram index answers searches of 3 characters or more (see #useIndex).
        filtered = filtered.where(indexedSearch(this.options.searchIndex, new Placeholder('$phrase') as unknown as string))
      }
      // Also with the index: its candidates are checked against the very same condition.
      filtered = filtered.where((eb) => eb.or(this.#searchIn.map((column) => matchesIgnoringCase(column, pattern))))
    }
    if (request.createdAfter !== undefined) filtered = filtered.where(sql.ref('created_at'), '>', new Placeholder('$createdAfter'))
    let ordered = filtered.select(this.columns.map((column) => sql.ref(column).as(column)))
    for (const sort of request.sort) ordered = ordered.orderBy(sql.ref(sort.field), sort.descending ? 'desc' : 'asc')
    const limit = new Placeholder('$limit') as unknown as number
    if (pagination.kind === 'offset') {
      shape = {
        kind: 'offset',
        page: ordered.limit(limit).offset(new Placeholder('$offset') as unknown as number).compile(),
        count: maintained
          ? this.store.db.selectFrom('collection_counts').select('total').where('name', '=', new Placeholder('$countKey') as unknown as string).compile()
          : this.store.db.selectFrom(filtered.select(sql.lit(1).as('one')).limit(new Placeholder('$countLimit') as unknown as number).as('capped'))
            .select((eb) => eb.fn.countAll().as('total')).compile()
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
