import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'

/** A suspension (docs/api.md, "Suspension"): why, since when, until when, by whom. */
export const SuspensionSchema = Type.Object({
  user_id: IdSchema,
  reason: Type.String({ description: 'Why, as the administrator gave it' }),
  suspended_at: TimestampSchema,
  until: Type.Union([TimestampSchema, Type.Null()], { description: 'When it ends by itself; null: when lifted' }),
  suspended_by: Type.Union([IdSchema, Type.Null()], { description: 'The administrator who suspended the account' })
}, { title: 'Suspension' })
export type Suspension = Static<typeof SuspensionSchema>

export const SuspensionCreateSchema = Type.Object({
  reason: Type.String({ minLength: 1, maxLength: 500, pattern: '^[^\\u0000-\\u001f\\u007f]+$', description: 'Shown to administrators, not to the user' }),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'When it ends by itself (in the future); absent: when lifted' }))
}, { additionalProperties: false })
export type SuspensionCreate = Static<typeof SuspensionCreateSchema>

export const SuspensionResponseSchema = DataEnvelope(SuspensionSchema)
