import { Type, type Static } from '@sinclair/typebox'
import { DataEnvelope, IdSchema } from './common.js'
import { ListItem, CollectionEnvelope } from './collection.js'
import { EmailSchema } from './user.js'

export const DeviceSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 }))
}, { additionalProperties: false, title: 'Device' })
export type Device = Static<typeof DeviceSchema>

export const LoginBodySchema = Type.Object({
  email: EmailSchema,
  password: Type.String({ minLength: 1, maxLength: 128 }),
  device: Type.Optional(DeviceSchema)
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBodySchema>

/** The body of every successful sign-in (docs/api.md, "Tokens"). */
export const TokenPairSchema = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Access token lifetime in seconds' }),
  refresh_expires_in: Type.Integer({ description: 'Refresh token lifetime in seconds' })
}, { title: 'TokenPair' })
export type TokenPair = Static<typeof TokenPairSchema>

export const RefreshBodySchema = Type.Object({
  refresh_token: Type.String({ minLength: 1, maxLength: 4096 })
}, { additionalProperties: false })

export const LogoutBodySchema = Type.Union([
  Type.Object({
    refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Ends this token\'s session instead of the access token\'s' }))
  }, { additionalProperties: false }),
  Type.Null()
])

/** One of the caller's live sessions (docs/api.md, "Sessions"). */
export const SessionSchema = Type.Object({
  id: IdSchema,
  device: Type.Record(Type.String(), Type.Unknown(), { description: 'Device information given at sign-in' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.String({ format: 'date-time' })
}, { title: 'Session' })
export type Session = Static<typeof SessionSchema>

export const SESSION_FIELDS = {
  sortable: ['created_at', 'last_used_at'],
  selectable: ['device', 'created_at', 'last_used_at'],
  searchIn: null
} as const

export const SessionListItemSchema = ListItem(SessionSchema, 'SessionListItem')

export const OAuthParamsSchema = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 32, description: 'google, github or microsoft (any case)' })
}, { additionalProperties: false })

export const OAuthCallbackQuerySchema = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 2048 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 1024 })),
  // Providers may add these; they carry nothing the service uses.
  scope: Type.Optional(Type.String({ maxLength: 2048 })),
  authuser: Type.Optional(Type.String({ maxLength: 16 })),
  prompt: Type.Optional(Type.String({ maxLength: 64 })),
  session_state: Type.Optional(Type.String({ maxLength: 512 }))
}, { additionalProperties: false })
export type OAuthCallbackQuery = Static<typeof OAuthCallbackQuerySchema>

/** Named response envelopes (components of the OpenAPI document). */
export const SessionCollectionSchema = CollectionEnvelope(SessionListItemSchema)
export const TokenPairResponseSchema = DataEnvelope(TokenPairSchema)
