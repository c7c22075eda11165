import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'

/** An impersonation (docs/api.md, "Impersonation"): who acts as whom, why, and until when. */
export const ImpersonationSchema = Type.Object({
  id: IdSchema,
  user_id: IdSchema,
  impersonator_id: IdSchema,
  reason: Type.String({ description: 'Why, as the administrator gave it; told to the user afterwards' }),
  created_at: TimestampSchema,
  expires_at: TimestampSchema
}, { title: 'Impersonation' })
export type Impersonation = Static<typeof ImpersonationSchema>

export const ImpersonationCreateSchema = Type.Object({
  reason: Type.String({ minLength: 3, maxLength: 500, pattern: '^[^\\u0000-\\u001f\\u007f]+$', description: 'Why: recorded, and told to the user afterwards' })
}, { additionalProperties: false })
export type ImpersonationCreate = Static<typeof ImpersonationCreateSchema>

/** The impersonation's access token: no refresh token, it ends when the token expires. */
export const ImpersonationGrantSchema = Type.Object({
  access_token: Type.String({ description: 'An access token of the user carrying `act: { sub: <administrator id> }` (RFC 8693)' }),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Seconds until the token, and the impersonation, end' }),
  impersonation: ImpersonationSchema
}, { title: 'ImpersonationGrant' })

export const ImpersonationGrantResponseSchema = DataEnvelope(ImpersonationGrantSchema)
