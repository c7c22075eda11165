import { type Static, Type } from '@sinclair/typebox'
import { CollectionEnvelope, ListItem } from './collection.js'
import { DataEnvelope, TimestampSchema } from './common.js'
import { ID_TOKEN_ALGORITHMS } from './keys.js'

/** The grants a client may be registered for (docs/api.md, "OAuth clients"). */
export const OAUTH_GRANT_TYPES = [
  'authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'
] as const
export type OAuthGrantType = typeof OAUTH_GRANT_TYPES[number]

/** The scopes of OpenID Connect the authorization server knows; any other is a custom scope, for machine clients. */
export const STANDARD_SCOPES = ['openid', 'profile', 'email', 'offline_access', 'organization'] as const

/** The scopes' list as messages and descriptions name it. */
export const STANDARD_SCOPES_LISTED = STANDARD_SCOPES.join(', ')

/** A client's id: 22 base64url characters (128 random bits), not a UUID. */
export const OAuthClientIdSchema = Type.String({
  pattern: '^[A-Za-z0-9_-]{22}$',
  examples: ['q8Xk3vN0bYtR2pLw7eHc1A'],
  description: 'The client_id: 22 base64url characters'
})

export const OAuthClientParamsSchema = Type.Object({ id: OAuthClientIdSchema }, { additionalProperties: false })

const NameSchema = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[^\\u0000-\\u001f\\u007f]+$',
  examples: ['Acme Dashboard'],
  description: 'Shown to people signing in; without control characters'
})
/** The rules beyond the form (https, loopback http, private-use schemes) are the service's. */
const UriSchema = Type.String({ minLength: 1, maxLength: 2048, format: 'uri', examples: ['https://app.example.com/callback'] })
const UrisSchema = (description: string) =>
  Type.Array(UriSchema, { maxItems: 10, uniqueItems: true, description })
const RedirectUrisSchema = UrisSchema('Where the authorization server may send the browser back with a code: each exactly as the client will send it')
const PostLogoutRedirectUrisSchema = UrisSchema('Where the browser may be sent after signing out at the authorization server')
const GrantTypeSchema = Type.Unsafe<OAuthGrantType>(Type.String({ enum: [...OAUTH_GRANT_TYPES] }))
const GrantTypesSchema = Type.Array(GrantTypeSchema, {
  minItems: 1, maxItems: OAUTH_GRANT_TYPES.length, uniqueItems: true
})
const ScopesSchema = Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_.:-]{0,63}$' }), {
  minItems: 1,
  maxItems: 20,
  uniqueItems: true,
  examples: [['openid', 'profile', 'email']],
  description: `The scopes the client may ask for: ${STANDARD_SCOPES_LISTED}, or custom scopes (a client with client_credentials only)`
})

const IdTokenAlgorithmSchema = Type.Union(ID_TOKEN_ALGORITHMS.map((algorithm) => Type.Literal(algorithm)), {
  description: `What the client's ID tokens are signed with: ${ID_TOKEN_ALGORITHMS.join(', ')}; RS256 (OpenID Connect's default) unless the client asks for another`
})

export const OAuthClientSchema = Type.Object({
  id: OAuthClientIdSchema,
  name: Type.String(),
  confidential: Type.Boolean({ description: 'Has a secret (a server-side application); false: a public client (a browser or native app, PKCE only)' }),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(GrantTypeSchema),
  scopes: Type.Array(Type.String()),
  id_token_signed_response_alg: IdTokenAlgorithmSchema,
  disabled: Type.Boolean({ description: 'A disabled client cannot sign anyone in; its codes and tokens were revoked when it was disabled' }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'OAuthClient' })
export type OAuthClient = Static<typeof OAuthClientSchema>

/** The client with its secret: only in the answers that create it or rotate the secret. */
export const OAuthClientWithSecretSchema = Type.Composite([OAuthClientSchema, Type.Object({
  client_secret: Type.Union([Type.String({ minLength: 43, maxLength: 43 }), Type.Null()], {
    description: 'The secret, shown this once (the service keeps only its SHA-256); null for a public client'
  })
})], { title: 'OAuthClientWithSecret' })
export type OAuthClientWithSecret = Static<typeof OAuthClientWithSecretSchema>

export const OAuthClientCreateSchema = Type.Object({
  name: NameSchema,
  confidential: Type.Optional(Type.Boolean({ default: true })),
  redirect_uris: Type.Optional(UrisSchema('Where the authorization server may send the browser back with a code: each exactly as the client will send it; none (the default) for a machine client')),
  post_logout_redirect_uris: Type.Optional(PostLogoutRedirectUrisSchema),
  grant_types: GrantTypesSchema,
  scopes: ScopesSchema,
  id_token_signed_response_alg: Type.Optional(IdTokenAlgorithmSchema)
}, { additionalProperties: false })
export type OAuthClientCreate = Static<typeof OAuthClientCreateSchema>

export const OAuthClientUpdateSchema = Type.Object({
  name: Type.Optional(NameSchema),
  redirect_uris: Type.Optional(RedirectUrisSchema),
  post_logout_redirect_uris: Type.Optional(PostLogoutRedirectUrisSchema),
  grant_types: Type.Optional(GrantTypesSchema),
  scopes: Type.Optional(ScopesSchema),
  id_token_signed_response_alg: Type.Optional(IdTokenAlgorithmSchema),
  disabled: Type.Optional(Type.Boolean({ description: 'true revokes every code, token and consent the client holds' }))
}, { additionalProperties: false })
export type OAuthClientUpdate = Static<typeof OAuthClientUpdateSchema>

export const OAUTH_CLIENT_FIELDS = {
  sortable: ['name', 'created_at'],
  selectable: ['name', 'confidential', 'redirect_uris', 'post_logout_redirect_uris', 'grant_types', 'scopes', 'id_token_signed_response_alg', 'disabled', 'created_at', 'updated_at'],
  searchIn: null
} as const

export const OAuthClientResponseSchema = DataEnvelope(OAuthClientSchema)
export const OAuthClientWithSecretResponseSchema = DataEnvelope(OAuthClientWithSecretSchema)
export const OAuthClientCollectionSchema = CollectionEnvelope(ListItem(OAuthClientSchema, 'OAuthClientListItem'))

/**
 * A dynamic client registration request (RFC 7591), when the operator enables it: the members
 * the service reads; others are ignored, as the RFC has it.
 */
export const DynamicRegistrationSchema = Type.Object({
  client_name: Type.Optional(NameSchema),
  redirect_uris: Type.Optional(RedirectUrisSchema),
  post_logout_redirect_uris: Type.Optional(PostLogoutRedirectUrisSchema),
  grant_types: Type.Optional(GrantTypesSchema),
  response_types: Type.Optional(Type.Array(Type.Literal('code'), { maxItems: 1 })),
  token_endpoint_auth_method: Type.Optional(Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post'), Type.Literal('none')], {
    description: 'A secret in the Authorization header or in the body (both are accepted from a confidential client), or none: a public client'
  })),
  id_token_signed_response_alg: Type.Optional(IdTokenAlgorithmSchema),
  scope: Type.Optional(Type.String({ maxLength: 1400, pattern: '^[a-z][a-z0-9_.:-]{0,63}( [a-z][a-z0-9_.:-]{0,63}){0,19}$' }))
}, { additionalProperties: true, title: 'DynamicRegistration' })
export type DynamicRegistration = Static<typeof DynamicRegistrationSchema>

/** The registered client as RFC 7591 answers it; the secret is in this answer only. */
export const DynamicRegistrationResponseSchema = Type.Object({
  client_id: Type.String(),
  client_secret: Type.Optional(Type.String()),
  client_id_issued_at: Type.Integer(),
  client_secret_expires_at: Type.Optional(Type.Literal(0)),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  post_logout_redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.String(),
  id_token_signed_response_alg: Type.String(),
  scope: Type.String()
}, { title: 'DynamicRegistrationResponse' })
export type DynamicRegistrationResponse = Static<typeof DynamicRegistrationResponseSchema>

/** RFC 7591's error answer. */
export const DynamicRegistrationErrorSchema = Type.Object({
  error: Type.Union([Type.Literal('invalid_client_metadata'), Type.Literal('invalid_redirect_uri'), Type.Literal('invalid_token')]),
  error_description: Type.String()
}, { title: 'DynamicRegistrationError' })
