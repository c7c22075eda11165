import { type CompiledQuery, type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { CursorCodec } from '../collection/cursor.js'
import { type CollectionRequest, OFFSET_REACH, queryFingerprint, type SortKey } from '../collection/query.js'
import { bindNamed, Placeholder, type ReadRows } from './prepared.js'
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

/** What a collection's queries run on. */
export interface PageStore {
  db: Db
  dialect: Dialect
  cursors: CursorCodec
  read: ReadRows
  /** How many matches a filtered collection counts (COLLECTION_COUNT_LIMIT). */
  countLimit: number
}

export interface PageOptions<Values extends FilterValues> {
  /** Columns a search matches, ignoring case. */
  searchIn?: readonly string[]
  /**
   * The trigram index over `searchIn` (migrations/0010-collections-at-scale.ts),
   * used for searches of 3 characters or more.
   */
  searchIndex?: SearchIndex
  /**
   * The collection_counts row holding the exact number of rows these filter values select, when
   * one is maintained for them (migrations/0010-collections-at-scale.ts); undefined: the rows are counted, up to
   * the count limit. The key is bound as a value; whether there is one is part of the query's shape.
   */
  maintainedCount?: (values: Values) => string | undefined
  /**
   * Every search the index does not answer (see #probe) is windowed, as a short one is (see
   * #shape): for a collection whose searched columns are another table's, joined, where
   * counting a common term's matches in order would read a row and a join per record.
   */
  windowUnindexedSearches?: boolean
}

/**
 * The compiled queries of one shape: offset pages also count the rows (`count`, or `probed`
 * when the search index's probe counted them already). A windowed cursor page reads, when it
 * is not full, the last record of its window (`windowEnd`).
 */
type Shape =
  | { kind: 'offset', page: CompiledQuery<any>, count: CompiledQuery<any> | 'probed', windowed: boolean }
  | { kind: 'cursor', page: CompiledQuery<any>, windowEnd: CompiledQuery<any> | undefined }

/**
 * Up to this many matches, a search's page reads its matches from the trigram index and sorts
 * them; beyond, it reads the collection in its order (see #probe). Reading and sorting 10,000
 * posts took 40 ms at 10,000 rows (bench/RESULTS.md, "scale"); reading in order fills a page
 * after limit × rows / matches rows, at most 500 × the limit at this many matches in a
 * million rows.
 */
const MATCHES_READ_WHOLE = 2000

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
  /** Counts a search's trigram-index matches, up to #probeLimit + 1 (SQLite). */
  #probeQuery: CompiledQuery<any> | undefined

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
      $countLimit: this.store.countLimit + 1
    }
    if (pagination.kind === 'offset') {
      values.$limit = pagination.limit
      values.$offset = (pagination.page - 1) * pagination.limit
    } else {
      values.$limit = pagination.limit + 1
      pagination.after?.forEach((value, index) => { values[`$after${index}`] = value })
    }
    const probed = this.#probe(request.search)
    const indexed = probed !== undefined && probed <= MATCHES_READ_WHOLE
    // The index's count is the search's when nothing else narrows it: it holds the same lowered text.
    const countProbed = probed !== undefined && request.createdAfter === undefined &&
      Object.values(filters).every((value) => value === undefined)
    const shape = this.#shape(request, filters, { maintained: countKey !== undefined, indexed, countProbed })
    const bind = <Result>(query: CompiledQuery<any>) => this.store.read<Result>(bindNamed(query, values))

    if (pagination.kind === 'offset' && shape.kind === 'offset') {
      const [items, counted] = await Promise.all([
        bind<Row>(shape.page),
        shape.count === 'probed' ? [{ total: probed ?? 0 }] : bind<{ total: number | string | bigint | null, examined?: number | string | bigint }>(shape.count)
      ])
      const counts = Number(counted[0]?.total ?? 0)
      // A maintained count is exact however large; a counted one stops past the count limit, and a
      // windowed one is exact only when its window held every record.
      const { countLimit } = this.store
      const totalExact = countKey !== undefined ||
        (shape.windowed ? Number(counted[0]?.examined ?? 0) < countLimit : counts <= countLimit)
      const total = countKey === undefined ? Math.min(counts, countLimit) : counts
      const { page, limit } = pagination
      return { kind: 'offset', items, page, limit, total, totalExact, totalPages: Math.ceil(total / limit) }
    }

    const { limit } = pagination
    const rows = await bind<Row>(shape.page)
    const items = rows.slice(0, limit)
    let resumeAt: Row | undefined
    if (rows.length > limit) {
      resumeAt = items.at(-1)
    } else if (shape.kind === 'cursor' && shape.windowEnd !== undefined) {
      // A full window that did not fill the page: the next page goes on after the window.
      resumeAt = (await bind<Row>(shape.windowEnd))[0]
    }
    const nextCursor = resumeAt === undefined
      ? null
      : this.store.cursors.encode(
        queryFingerprint(request), request.sort.map((key) => (resumeAt as Record<string, unknown>)[key.field])
      )
    return { kind: 'cursor', items, nextCursor, hasMore: resumeAt !== undefined }
  }

  /**
   * How many rows a search's trigram index matches, up to #probeLimit + 1 (SQLite); undefined
   * when there is no index or the search is too short for it. The index answers which rows
   * match, not in the page's order: its matches are read whole and sorted, which is cheap while
   * they are few (MATCHES_READ_WHOLE). A search matching more rows reads the collection in its
   * order instead, checking each row: with that many matches the page fills quickly. The probe
   * itself reads at most #probeLimit + 1 index entries, and no rows.
   */
  #probe (search: string | undefined): number | undefined {
    const index = this.options.searchIndex
    const phrase = searchPhrase(search)
    if (this.store.dialect !== 'sqlite' || index === undefined || phrase === undefined) return undefined
    this.#probeQuery ??= this.store.db.selectFrom(sql<{ rowid: number }>`(select rowid from ${sql.table(index.table)} where ${sql.table(index.table)} match ${new Placeholder('$phrase')} limit ${new Placeholder('$countLimit')})`.as('matches'))
      .select((eb) => eb.fn.countAll().as('total')).compile()
    const parameters = [phrase, this.#probeLimit + 1]
    const matches = this.store.read<{ total: number }>({ ...this.#probeQuery, parameters })
    if (matches instanceof Promise) return undefined
    return Number(matches[0]?.total ?? 0)
  }

  /** What the probe counts to: enough to tell whether matches are read whole, and to serve as the count. */
  get #probeLimit (): number {
    return Math.max(MATCHES_READ_WHOLE, this.store.countLimit)
  }

  /** The maintained count serving this request, if any: only without search and createdAfter. */
  #countKey (request: CollectionRequest, filters: Values): string | undefined {
    if (request.pagination.kind !== 'offset' || request.search !== undefined || request.createdAfter !== undefined) return undefined
    return this.options.maintainedCount?.(filters)
  }

  /**
   * The compiled queries for this request's shape, built on first use. A search too short for
   * trigrams is windowed: its page looks at the first OFFSET_REACH records of the ordering (after
   * the cursor), as far as offset pages reach, and its count at the first count-limit records,
   * so that no query reads more than that many rows however rare its matches.
   */
  #shape (
    request: CollectionRequest,
    filters: Values,
    how: { maintained: boolean, indexed: boolean, countProbed: boolean }
  ): Shape {
    const { pagination } = request
    const { maintained, indexed, countProbed } = how
    const afterCount = pagination.kind === 'cursor' ? pagination.after?.length ?? 0 : 0
    const filterShape = Object.entries(filters).map(([name, value]) => `${name}${value === undefined ? '-' : value === null ? '0' : '+'}`)
    const search = request.search !== undefined && this.#searchIn.length > 0
    const windowed = search &&
      (searchPhrase(request.search) === undefined || (this.options.windowUnindexedSearches === true && !indexed))
    const key = `${request.sort.map((sort) => `${sort.descending ? '-' : ''}${sort.field}`).join(',')}|${pagination.kind}${afterCount}|${filterShape.join(',')}` +
      `|${search ? 's' : ''}${indexed ? 'i' : ''}${windowed ? 'w' : ''}${countProbed ? 'p' : ''}${request.createdAfter !== undefined ? 'c' : ''}${maintained ? 'm' : ''}`
    let shape = this.#shapes.get(key)
    if (shape !== undefined) return shape

    const placeholders = Object.fromEntries(Object.entries(filters).map(([name, value]) =>
      [name, value === undefined || value === null ? value : new Placeholder(name)])) as Values
    let filtered = this.filtered(placeholders)
    if (request.createdAfter !== undefined) filtered = filtered.where(sql.ref('created_at'), '>', new Placeholder('$createdAfter'))
    const bounds = Array.from({ length: afterCount }, (_, index) => new Placeholder(`$after${index}`))
    const resumed = afterCount === 0 ? filtered : filtered.where((eb) => after(eb, request.sort, bounds))
    const ordered = <Query extends SelectQueryBuilder<any, any, any>>(query: Query): Query => {
      let sorted = query
      for (const sort of request.sort) sorted = sorted.orderBy(sql.ref(sort.field), sort.descending ? 'desc' : 'asc') as Query
      return sorted
    }
    const columns = [...new Set([...this.columns, ...this.#searchIn])]
    const selected = (query: SelectQueryBuilder<any, any, object>) =>
      query.select(columns.map((column) => sql.ref(column).as(column)))
    // What the page and the count read: the rows the filters (and the cursor) leave, or, for a
    // windowed search, the first `size` of them in the page's order.
    const windowOf = (size: number) => this.store.db.selectFrom(ordered(selected(resumed)).limit(sql.lit(size) as unknown as number).as('window'))
    let matching = windowed ? windowOf(OFFSET_REACH) : resumed
    if (search) {
      const pattern = new Placeholder('$search') as unknown as string
      if (indexed && this.options.searchIndex !== undefined) {
        // SQLite's trigram index answers searches of 3 characters or more (see #probe) exactly:
        // it holds the same lowered text, and a phrase of trigrams matches where the text is a
        // substring of one column, as the comparison below does; reading each match's columns
        // again to compare was a third of the page's time at a million rows.
        matching = matching.where(indexedSearch(this.options.searchIndex, new Placeholder('$phrase') as unknown as string))
      } else {
        matching = matching.where((eb) => eb.or(this.#searchIn.map((column) => matchesIgnoringCase(column, pattern))))
      }
    }
    const page = ordered(matching.select(this.columns.map((column) => sql.ref(column).as(column))))
    const limit = new Placeholder('$limit') as unknown as number
    if (pagination.kind === 'offset') {
      let count: CompiledQuery<any> | 'probed'
      if (maintained) {
        count = this.store.db.selectFrom('collection_counts').select('total').where('name', '=', new Placeholder('$countKey') as unknown as string).compile()
      } else if (countProbed) {
        count = 'probed'
      } else if (windowed) {
        const match = sql.join(this.#searchIn.map((column) => matchesIgnoringCase(column, new Placeholder('$search') as unknown as string)), sql` or `)
        count = this.store.db.selectFrom(windowOf(this.store.countLimit).selectAll().as('examined'))
          .select((eb) => [eb.fn.countAll().as('examined'), sql<number>`coalesce(sum(case when ${match} then 1 else 0 end), 0)`.as('total')]).compile()
      } else {
        count = this.store.db.selectFrom(matching.select(sql.lit(1).as('one')).limit(new Placeholder('$countLimit') as unknown as number).as('capped'))
          .select((eb) => eb.fn.countAll().as('total')).compile()
      }
      shape = { kind: 'offset', page: page.limit(limit).offset(new Placeholder('$offset') as unknown as number).compile(), count, windowed }
    } else {
      // The window's last record, when it holds OFFSET_REACH (there may be more after it).
      const windowEnd = windowed
        ? ordered(resumed.select(request.sort.map((sort) => sql.ref(sort.field).as(sort.field))))
          .limit(1).offset(sql.lit(OFFSET_REACH - 1) as unknown as number).compile()
        : undefined
      shape = { kind: 'cursor', page: page.limit(limit).compile(), windowEnd }
    }
    if (this.#shapes.size >= MAX_SHAPES) this.#shapes.clear()
    this.#shapes.set(key, shape)
    return shape
  }
}
