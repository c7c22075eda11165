import { Type, type TProperties, type TSchema } from '@sinclair/typebox'

/** ISO 8601 date or date-time; checked for a real calendar instant in code. */
const ISO_DATE_OR_DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2}))?$'

export interface CollectionFields {
  /** Field names accepted by `sort` (besides `id`). */
  sortable: readonly string[]
  /** Field names accepted by `fields` (besides `id`, which is always returned). */
  selectable: readonly string[]
  /** What `search` matches, or null when the resource has no text to search. */
  searchIn: string | null
}

/**
 * Spec 4.3's collection parameters for one resource. The allow-lists are enforced in
 * `src/collection/query.ts` (so the error names the unknown field); here they document.
 */
export function CollectionQuerySchema (fields: CollectionFields, extra: TProperties = {}) {
  return Type.Object({
    page: Type.Optional(Type.Integer({ minimum: 1, description: 'Offset pagination page, 1-based (default 1)' })),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size' }),
    cursor: Type.Optional(Type.String({
      maxLength: 1024,
      description: 'Cursor pagination: empty for the first page, then meta.nextCursor'
    })),
    sort: Type.Optional(Type.String({
      maxLength: 200,
      pattern: '^-?[a-z_]+(,-?[a-z_]+)*$',
      description: `Comma-separated fields, leading '-' for descending. Allowed: ${['id', ...fields.sortable].join(', ')}`
    })),
    fields: Type.Optional(Type.String({
      maxLength: 200,
      pattern: '^[a-z_]+(,[a-z_]+)*$',
      description: `Comma-separated fields to return (id always included). Allowed: ${fields.selectable.join(', ')}`
    })),
    ...(fields.searchIn !== null && {
      search: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: `Case-insensitive substring of ${fields.searchIn}` }))
    }),
    createdAfter: Type.Optional(Type.String({
      pattern: ISO_DATE_OR_DATE_TIME,
      description: 'Only records created strictly after this ISO 8601 date or date-time'
    })),
    ...extra
  }, { additionalProperties: false })
}

export const OffsetMetaSchema = Type.Object({
  page: Type.Integer(),
  limit: Type.Integer(),
  total: Type.Integer({ description: 'Number of matching records' }),
  totalPages: Type.Integer()
}, { title: 'OffsetMeta' })

export const CursorMetaSchema = Type.Object({
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Opaque; null on the last page' }),
  hasMore: Type.Boolean()
}, { title: 'CursorMeta' })

/** Spec 2.3 / 2.4: `{ data: [...], meta }`, offset or cursor style. */
export function CollectionEnvelope<T extends TSchema> (item: T) {
  return Type.Object({
    data: Type.Array(item),
    meta: Type.Union([OffsetMetaSchema, CursorMetaSchema])
  })
}
