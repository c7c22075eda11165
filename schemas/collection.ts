import { type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox'
import { component } from './components.js'

/**
 * The last page: its offset, (page - 1) × limit, stays an exact integer in JavaScript and in
 * both databases' 64-bit integers (an unbounded page overflowed them: a 500), and no
 * collection here comes near it.
 */
const MAX_PAGE = 2 ** 31 - 1

/**
 * ISO 8601 date or date-time with real months, days of the month and times of day; that
 * 29 February falls in a leap year is checked in code (src/collection/query.ts). Digits are
 * spelled [0-9]: `\d` is any Unicode digit in some clients' regular expressions (Python's).
 */
const MONTH_AND_DAY = '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-9]))'
const TIME_OF_DAY = '(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\\.[0-9]{1,9})?)?'
const ISO_DATE_OR_DATE_TIME = `^[0-9]{4}-${MONTH_AND_DAY}(?:T${TIME_OF_DAY}(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]))?$`

export interface CollectionFields {
  /** Field names accepted by `sort` (besides `id`). */
  sortable: readonly string[]
  /** Field names accepted by `fields` (besides `id`, which is always returned). */
  selectable: readonly string[]
  /** What `search` matches, or null when the resource has no text to search. */
  searchIn: string | null
}

/** The keys `sort` takes: each sortable field (and `id`), ascending and with `-` descending. */
export function sortKeys (fields: CollectionFields): string[] {
  return ['id', ...fields.sortable].flatMap((name) => [name, `-${name}`])
}

/**
 * Parameters that list several values: repeated (`sort=-name&sort=id`) or comma-separated
 * (`sort=-name,id`); the query-string validator splits the commas (src/http/validation.ts).
 */
function ListParameter (values: string[], description: string) {
  return Type.Array(Type.String({ enum: values }), { minItems: 1, maxItems: values.length, description })
}

/**
 * The collection parameters for one resource (docs/api.md, "Collections"). `sort` and `fields`
 * enumerate the resource's allow-lists; `src/collection/query.ts` reads them and refuses a
 * field given twice.
 */
export function CollectionQuerySchema<T extends TProperties = {}> (fields: CollectionFields, extra: T = {} as T) {
  const properties = {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, description: 'Offset pagination page, 1-based (default 1); page × limit at most 10000, cursor beyond; not with cursor' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size (default 20)' })),
    cursor: Type.Optional(Type.String({
      maxLength: 1024,
      description: 'Cursor pagination: empty for the first page, then meta.nextCursor; not with page'
    })),
    sort: Type.Optional(ListParameter(sortKeys(fields), 'Fields to sort by, in order, \'-\' for descending; each field at most once (not both `name` and `-name`). Repeated or comma-separated')),
    fields: Type.Optional(ListParameter(['id', ...fields.selectable], 'Fields to return (id always is). Repeated or comma-separated')),
    search: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: `Case-insensitive substring of ${fields.searchIn ?? 'nothing'}` })),
    createdAfter: Type.Optional(Type.String({
      pattern: ISO_DATE_OR_DATE_TIME,
      description: 'Only records created strictly after this ISO 8601 date or date-time'
    })),
    ...extra
  }
  // A resource without text to search does not take `search` (unknown parameters are refused).
  if (fields.searchIn === null) delete (properties as Partial<typeof properties>).search
  return Type.Object(properties, { additionalProperties: false })
}

export const OffsetMetaSchema = Type.Object({
  kind: Type.Literal('offset', { description: 'Which pagination answered: page and limit' }),
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer({ description: 'Number of matching records; when the collection is filtered or searched, at most the count limit (COLLECTION_COUNT_LIMIT, 1000 by default; see totalExact)' }),
  totalExact: Type.Boolean({ description: 'false when the count stopped at its limit: there are more matching records (a page past totalPages answers normally)' }),
  totalPages: Type.Integer({ description: 'ceil(total / limit)' })
}, { title: 'OffsetMeta' })

export const CursorMetaSchema = Type.Object({
  kind: Type.Literal('cursor', { description: 'Which pagination answered: cursor' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Opaque; null on the last page' }),
  hasMore: Type.Boolean()
}, { title: 'CursorMeta' })

/** `{ data: [...], meta }`, offset or cursor style, named `<Resource>Collection` (docs/api.md, "Collections"). */
export function CollectionEnvelope<T extends TSchema> (item: T) {
  const title = (item as { title?: unknown }).title
  if (typeof title !== 'string') throw new Error('collection items need a title: it names their component')
  return component(`${title.replace(/ListItem$/, '')}Collection`, Type.Object({
    data: Type.Array(component(title, item)),
    // `kind` tells the two apart: a discriminator for generated clients, which the serializer ignores.
    meta: Type.Union([component('OffsetMeta', OffsetMetaSchema), component('CursorMeta', CursorMetaSchema)], {
      discriminator: { propertyName: 'kind', mapping: { offset: '#/components/schemas/OffsetMeta', cursor: '#/components/schemas/CursorMeta' } }
    })
  }))
}

/** A collection item: `fields` may leave out everything but `id`. */
export function ListItem<T extends TProperties & { id: TSchema }> (resource: TObject<T>, title: string) {
  return Type.Composite([Type.Pick(resource, ['id']), Type.Partial(Type.Omit(resource, ['id']))], { title })
}
