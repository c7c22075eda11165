import { Type, type Static, type TSchema } from '@sinclair/typebox'

export const IdSchema = Type.String({
  format: 'uuid',
  description: 'Resource identifier (UUID, time-ordered)'
})

export const TimestampSchema = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC timestamp'
})

export const IdParamsSchema = Type.Object({ id: IdSchema }, { additionalProperties: false })
export type IdParams = Static<typeof IdParamsSchema>

/** Spec 2.5: every single resource travels as `{ data: <resource> }`. */
export function DataEnvelope<T extends TSchema> (item: T) {
  return Type.Object({ data: item })
}
