import { createHash } from 'node:crypto'
import type { CollectionFields } from '../../schemas/collection.js'
import type { ValidationIssue } from '../../schemas/errors.js'
import { validationFailed } from '../errors.js'
import type { CursorCodec } from './cursor.js'

export interface SortKey { field: string, descending: boolean }

export type Pagination =
  | { kind: 'offset', page: number, limit: number }
  | { kind: 'cursor', limit: number, after: unknown[] | null }

/** A validated collection request: what the store needs to build one bounded query. */
export interface CollectionRequest {
  /** Whose collection, seen by whom (CollectionOptions.scope): the cursor's binding, not part of the SQL. */
  scope: string
  /** Always ends with `id`, so the order is total and pages never overlap or skip. */
  sort: SortKey[]
  /** Fields to return besides `id`; null means all. */
  fields: string[] | null
  search?: string
  /** ISO 8601, normalized to the stored format. */
  createdAfter?: string
  /** Resource-specific equality filters (e.g. status), already validated by the route schema. */
  filters: Record<string, string>
  pagination: Pagination
}

/**
 * Identifies the collection, its viewer, sort and filters, binding cursors to the query that
 * made them. Computed only for cursor pages: offset pages (the common case) need no hash.
 */
export function queryFingerprint (request: Pick<CollectionRequest, 'scope' | 'sort' | 'search' | 'createdAfter' | 'filters'>): string {
  return createHash('sha256')
    .update(JSON.stringify([
      request.scope, request.sort, request.search ?? null, request.createdAfter ?? null, request.filters
    ]))
    .digest('base64url')
    .slice(0, 22)
}

/** The page size when none is given (docs/api.md, "Collections"). */
export const DEFAULT_LIMIT = 20

/**
 * How far offset pages reach (docs/api.md, "Collections"): skipping more rows costs in
 * proportion to them; cursors reach every record.
 */
export const OFFSET_REACH = 10_000

/**
 * How many matches a filtered collection counts (COLLECTION_COUNT_LIMIT, docs/api.md,
 * "Collections at scale"): counting costs in proportion to the matches counted.
 */
export const COUNT_LIMITS = { default: 1000, min: 100, max: 10_000 } as const

export interface CollectionQueryInput {
  page?: number
  limit?: number
  cursor?: string
  sort?: readonly string[]
  fields?: readonly string[]
  search?: string
  createdAfter?: string
}

export interface CollectionOptions extends CollectionFields {
  /** Sort when none is given; `id` is appended as the tie-breaker. */
  defaultSort: SortKey[]
  /**
   * The collection's name, with the ids of its owner and its viewer where they decide what it
   * holds (`sessions:<user id>`). A cursor is signed with it, so one taken from another
   * collection, or from another user's, is refused rather than read as a position here.
   */
  scope: string
}

function parseSort (
  value: readonly string[] | undefined,
  options: CollectionOptions,
  issues: ValidationIssue[]
): SortKey[] {
  if (value === undefined) return [...options.defaultSort, { field: 'id', descending: false }]
  const keys: SortKey[] = []
  for (const token of value) {
    const descending = token.startsWith('-')
    const field = descending ? token.slice(1) : token
    if (field !== 'id' && !options.sortable.includes(field)) {
      issues.push({ path: '/sort', message: `unknown sort field "${field}"; allowed: ${['id', ...options.sortable].join(', ')}` })
    } else if (keys.some((key) => key.field === field)) {
      issues.push({ path: '/sort', message: `sort field "${field}" is given twice` })
    } else {
      keys.push({ field, descending })
    }
  }
  return keys.some((key) => key.field === 'id') ? keys : [...keys, { field: 'id', descending: keys.at(-1)?.descending ?? false }]
}

function parseFields (
  value: readonly string[] | undefined,
  options: CollectionOptions,
  issues: ValidationIssue[]
): string[] | null {
  if (value === undefined) return null
  const fields = [...new Set(value)].filter((field) => field !== 'id')
  const unknown = fields.filter((field) => !options.selectable.includes(field))
  if (unknown.length > 0) {
    issues.push({ path: '/fields', message: `unknown fields: ${unknown.join(', ')}; allowed: ${['id', ...options.selectable].join(', ')}` })
  }
  return fields
}

function parseInstant (value: string | undefined, issues: ValidationIssue[]): string | undefined {
  if (value === undefined) return undefined
  const time = Date.parse(value)
  const [year = 0, month = 0, day = 0] = value.slice(0, 10).split('-').map(Number)
  // Date.parse accepts 2026-02-30 (as March 2nd); the calendar check refuses it.
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (Number.isNaN(time) || month < 1 || month > 12 || day < 1 || day > daysInMonth) {
    issues.push({ path: '/createdAfter', message: 'must be a valid ISO 8601 date or date-time' })
    return undefined
  }
  return new Date(time).toISOString()
}

/**
 * Validates the parameters against the resource's allow-lists (docs/api.md, "Collections")
 * and resolves the cursor. Throws a 400 VALIDATION_FAILED listing every problem.
 */
export function parseCollectionQuery (
  query: CollectionQueryInput,
  options: CollectionOptions,
  cursors: CursorCodec,
  filters: Record<string, string> = {}
): CollectionRequest {
  const issues: ValidationIssue[] = []
  const sort = parseSort(query.sort, options, issues)
  const fields = parseFields(query.fields, options, issues)
  const createdAfter = parseInstant(query.createdAfter, issues)
  const limit = query.limit ?? DEFAULT_LIMIT
  let pagination: Pagination = { kind: 'offset', page: query.page ?? 1, limit }
  const skipped = pagination.page * limit
  if (query.cursor === undefined && Number.isFinite(skipped) && skipped > OFFSET_REACH) {
    issues.push({ path: '/page', message: `page × limit must be at most ${OFFSET_REACH}; use cursor pagination (cursor=) to reach later records` })
  }
  if (query.cursor !== undefined) {
    if (query.page !== undefined) issues.push({ path: '/page', message: 'cannot be combined with cursor' })
    const after = query.cursor === '' ? null : cursors.decode(query.cursor, queryFingerprint({ scope: options.scope, sort, search: query.search, createdAfter, filters }))
    if (query.cursor !== '' && (after === null || after.length !== sort.length)) {
      issues.push({ path: '/cursor', message: 'is not a cursor issued for this collection, sort and filter' })
    }
    pagination = { kind: 'cursor', limit, after }
  }
  // Ajv's query-string coercion takes "Infinity" and "1e400" for integers and skips their range.
  for (const [name, value] of [['page', query.page], ['limit', query.limit]] as const) {
    if (value !== undefined && !Number.isFinite(value)) issues.push({ path: `/${name}`, message: 'must be a finite integer' })
  }
  if (issues.length > 0) throw validationFailed(issues)
  return {
    scope: options.scope,
    sort,
    fields,
    ...(query.search !== undefined && { search: query.search }),
    ...(createdAfter !== undefined && { createdAfter }),
    filters,
    pagination
  }
}
