import { Type } from '@sinclair/typebox'
import { component } from './components.js'

/** What ID tokens may be signed with, RS256 first: OpenID Connect's default, the one every relying party verifies. */
export const ID_TOKEN_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const

const Base64UrlSchema = Type.String({ pattern: '^[A-Za-z0-9_-]+$' })

/** A public key as a JSON Web Key; which members it has depends on `kty`. */
export const PublicJwkSchema = component('PublicJwk', Type.Object({
  kty: Type.Union([Type.Literal('OKP'), Type.Literal('EC'), Type.Literal('RSA')]),
  kid: Type.String({ description: 'The key\'s JWK thumbprint (SHA-256 of its required members); the `kid` header of the tokens it signs' }),
  alg: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256'), Type.Literal('RS256')]),
  use: Type.Literal('sig'),
  crv: Type.Optional(Type.Union([Type.Literal('Ed25519'), Type.Literal('P-256')], { description: 'OKP and EC keys' })),
  x: Type.Optional({ ...Base64UrlSchema, description: 'OKP and EC keys' }),
  y: Type.Optional({ ...Base64UrlSchema, description: 'EC keys' }),
  n: Type.Optional({ ...Base64UrlSchema, description: 'RSA keys: the modulus' }),
  e: Type.Optional({ ...Base64UrlSchema, description: 'RSA keys: the exponent' })
}))

/** The JWK Set: no envelope, as verifiers expect it. */
export const JwksSchema = component('Jwks', Type.Object({
  keys: Type.Array(PublicJwkSchema, { description: 'The signing key and the previous keys still accepted; empty under HS256' })
}))

/** OpenID discovery metadata, the part that applies to this service (docs/api.md, "Signing keys"). */
export const OpenIdConfigurationSchema = component('OpenIdConfiguration', Type.Object({
  issuer: Type.String({ description: 'JWT_ISSUER as set (the `iss` of every token), or this service\'s address when unset (tokens then carry no `iss`)' }),
  jwks_uri: Type.String({ description: 'Built on JWT_ISSUER when it is an http(s) URL, else on the address the request was made to; so are the endpoints' }),
  token_endpoint: Type.String({ description: 'Password sign-in (JSON body, not the OAuth 2 form)' }),
  refresh_endpoint: Type.String({ description: 'This service\'s own member: a new token pair for a refresh token (JSON body `refresh_token`)' }),
  logout_endpoint: Type.String({ description: 'This service\'s own member: revokes the bearer access token and ends its session (optional JSON body `refresh_token`); not an OAuth 2 revocation endpoint' }),
  userinfo_endpoint: Type.String({ description: 'The caller, for a bearer access token' }),
  subject_types_supported: Type.Array(Type.String()),
  id_token_signing_alg_values_supported: Type.Array(Type.String(), { description: 'With the authorization server on, what its ID tokens may be signed with (RS256, ES256, EdDSA); off, as `api_token_signing_alg_values_supported`' }),
  api_token_signing_alg_values_supported: Type.Array(Type.String(), { description: 'This service\'s own member: the algorithm of every key the API\'s tokens are still verified with, the signing key\'s first, then those of JWT_PREVIOUS_KEYS' }),
  token_endpoint_auth_methods_supported: Type.Array(Type.String(), { description: '`none`: sign-in authenticates the user, not a client' }),
  claims_supported: Type.Array(Type.String()),
  login_endpoint: Type.Optional(Type.String({ description: 'This service\'s own member, with the authorization server on: password sign-in (JSON body), which `token_endpoint` named before' }))
}, {
  additionalProperties: true,
  description: 'With the authorization server on (JWT_ISSUER an http(s) URL), its whole discovery document (RFC 8414), where `token_endpoint`, `userinfo_endpoint` and `jwks_uri` are its own, plus this service\'s members (docs/api.md, "Authorization server")'
}))
