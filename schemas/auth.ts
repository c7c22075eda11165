import { Type, type Static } from '@sinclair/typebox'
import { DataEnvelope, EXAMPLE_PASSWORD, IdSchema } from './common.js'
import { ListItem, CollectionEnvelope } from './collection.js'
import { EmailSchema } from './user.js'

export const SignInDeviceSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128, examples: ['laptop-7f3a'] }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100, examples: ['Work laptop'] }))
}, { additionalProperties: false, title: 'Device' })
export type SignInDevice = Static<typeof SignInDeviceSchema>

export const LoginBodySchema = Type.Object({
  email: EmailSchema,
  password: Type.String({ minLength: 1, maxLength: 128, examples: [EXAMPLE_PASSWORD] }),
  device: Type.Optional(SignInDeviceSchema)
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
  provider: Type.String({ minLength: 1, maxLength: 32, examples: ['google'], description: 'google, github, microsoft, or a provider named in OAUTH_PROVIDERS (any case)' })
}, { additionalProperties: false })

/** The S256 challenge: BASE64URL(SHA-256(verifier)) without padding, 43 characters. */
const PKCE_CHALLENGE = { pattern: '^[A-Za-z0-9_-]{43}$' }

export const OAuthAuthorizeQuerySchema = Type.Object({
  redirect_to: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'Browser applications: where the callback sends the browser back, with a one-time code; must start with an entry of OAUTH_REDIRECT_URLS' })),
  code_challenge: Type.Optional(Type.String({ ...PKCE_CHALLENGE, description: 'Browser applications: BASE64URL(SHA-256(code_verifier)), required with redirect_to' })),
  code_challenge_method: Type.Optional(Type.Literal('S256'))
}, { additionalProperties: false })
export type OAuthAuthorizeQuery = Static<typeof OAuthAuthorizeQuerySchema>

/**
 * What a provider sends back. Providers add parameters of their own (`hd`, `authuser`,
 * `prompt`, `session_state`, ...): others than these are ignored, never refused.
 */
export const OAuthCallbackQuerySchema = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 2048 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  iss: Type.Optional(Type.String({ maxLength: 2048, description: 'The issuer that sent the response: for a provider by issuer it must be that issuer, and it is required from a provider that declares it always sends it' })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 1024 }))
}, { additionalProperties: true })
export type OAuthCallbackQuery = Static<typeof OAuthCallbackQuerySchema>

export const OAuthExchangeBodySchema = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 128, description: 'The one-time code the callback sent the browser back with' }),
  code_verifier: Type.String({ pattern: '^[A-Za-z0-9._~-]{43,128}$', examples: ['dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'], description: 'The PKCE verifier (43 to 128 characters) whose challenge started the flow' })
}, { additionalProperties: false })
export type OAuthExchangeBody = Static<typeof OAuthExchangeBodySchema>

/** One of the caller's linked provider identities (docs/api.md, "Identities"). */
export const IdentitySchema = Type.Object({
  id: IdSchema,
  provider: Type.String(),
  created_at: Type.String({ format: 'date-time' })
}, { title: 'Identity' })
export type Identity = Static<typeof IdentitySchema>

/** Named response envelopes (components of the OpenAPI document). */
export const SessionCollectionSchema = CollectionEnvelope(SessionListItemSchema)
export const TokenPairResponseSchema = DataEnvelope(TokenPairSchema)
export const IdentityListResponseSchema = DataEnvelope(Type.Array(IdentitySchema, { title: 'IdentityList' }))
