import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { component } from './components.js'
import { OrganizationRoleSchema } from './organizations.js'
import { EmailSchema } from './user.js'

const NameSchema = Type.String({
  minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$', examples: ['Acme Entra ID'], description: 'Without control characters'
})
const AttributeNameSchema = Type.String({
  minLength: 1, maxLength: 256, pattern: '^[\\x21-\\x7e]+$', description: 'A SAML attribute\'s Name, or an OpenID provider\'s ID-token claim'
})

/**
 * Which of the assertion's attributes (or ID token's claims) hold the address, the name and the
 * groups; an absent one is looked for under the names the common IdPs send (docs/integration.md,
 * "Enterprise sign-in").
 */
export const SsoAttributeMappingSchema = Type.Object({
  email: Type.Optional(AttributeNameSchema),
  name: Type.Optional(AttributeNameSchema),
  groups: Type.Optional(AttributeNameSchema)
}, { additionalProperties: false, title: 'SsoAttributeMapping' })
export type SsoAttributeMapping = Static<typeof SsoAttributeMappingSchema>

/** A group the IdP names, to the organization role its members get; the highest role of a person's groups wins. */
export const SsoRoleMappingSchema = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), OrganizationRoleSchema, {
  maxProperties: 100, examples: [{ 'Acme Admins': 'admin' }]
})

const CertificateSchema = Type.String({
  minLength: 1, maxLength: 20_000, description: 'An X.509 certificate, PEM or base64 DER'
})

const IdentityProviderFields = {
  idp_metadata_xml: Type.Optional(Type.String({
    minLength: 1, maxLength: 500_000, description: 'The IdP\'s SAML metadata (its entity ID, SingleSignOnService and signing certificates); or its URL, or the three fields below'
  })),
  idp_metadata_url: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2048,
    format: 'uri',
    examples: ['https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/federationmetadata/2007-06/federationmetadata.xml'],
    description: 'Where the IdP publishes its SAML metadata (https): read now, then again every day, so that a new signing certificate is taken up by itself'
  })),
  idp_entity_id: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
  idp_sso_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, format: 'uri', description: 'Its SingleSignOnService for the HTTP-Redirect binding' })),
  idp_certificates: Type.Optional(Type.Array(CertificateSchema, { minItems: 1, maxItems: 5, description: 'Its signing certificates (at most 5)' }))
}

const TokenEndpointAuthMethodSchema = Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')], {
  description: 'How the service authenticates at the provider\'s token endpoint, as the client is registered there'
})

/** A scope token (RFC 6749, section 3.3). */
const ScopeSchema = Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' })

const OpenIdProviderFields = {
  oidc_issuer: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2048,
    format: 'uri',
    examples: ['https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/v2.0'],
    description: 'An OpenID Connect connection: the organization\'s own OpenID provider (https), exactly as its discovery document names it; ' +
      'with oidc_client_id and oidc_client_secret, instead of the SAML fields'
  })),
  oidc_client_id: Type.Optional(Type.String({ minLength: 1, maxLength: 512, pattern: '^[\\x20-\\x7e]+$', description: 'The service\'s client at that provider' })),
  oidc_client_secret: Type.Optional(Type.String({
    minLength: 1, maxLength: 2048, pattern: '^[\\x20-\\x7e]+$', description: 'Its secret: kept sealed, never shown again'
  })),
  oidc_token_endpoint_auth_method: Type.Optional(TokenEndpointAuthMethodSchema),
  oidc_scopes: Type.Optional(Type.Array(ScopeSchema, {
    minItems: 1, maxItems: 20, uniqueItems: true, description: 'Scopes asked for, openid among them (default: openid email profile)'
  }))
}

/** A self-signed certificate for the examples of the OpenAPI document only: no IdP holds its key. */
const EXAMPLE_CERTIFICATE = [
  'MIIDDzCCAfegAwIBAgIULpS9oyt5UOdCH3v1UlsHDerRlE4wDQYJKoZIhvcNAQELBQAwFjEUMBIGA1UEAwwLRXhhbXBsZSBJZFAw',
  'IBcNMjYxMjAzMDcxNjA4WhgPMjEyNjExMDkwNzE2MDhaMBYxFDASBgNVBAMMC0V4YW1wbGUgSWRQMIIBIjANBgkqhkiG9w0BAQEF',
  'AAOCAQ8AMIIBCgKCAQEAwLt53ozdNC4QnwsBN9cRE16ItLAfZb4dF/p09Kc5x5+YOkJHYli7YRHib/6MIXPSxLrTlW49GPNwKH92',
  'ajq8v9Ii0gNEDifNGtOWK//drf/qfHQJXomkRRvXGlk9ltHLEd1c8b1qmeZ6dYoauzl8aaYj3bzKvtc3IKpehuNAC91jNrd/B77S',
  '9BfUfvED90H2DQjj175z0diuJW97gPou7oEVXyVLrGBsBSQYsxTDmYW7lk07V/bV1PJuf5VnPHgf49pCEAv7HquvB9x40ENr+CMG',
  '0oI6dG4JyTPgAePyIDY0IdRgOKiYxOZnBpVSi/s9ZSVOVVNOrClB8MCH82RyNwIDAQABo1MwUTAdBgNVHQ4EFgQUYI296WFRfrGP',
  '4wO+r7DyPI/zd84wHwYDVR0jBBgwFoAUYI296WFRfrGP4wO+r7DyPI/zd84wDwYDVR0TAQH/BAUwAwEB/zANBgkqhkiG9w0BAQsF',
  'AAOCAQEAuCdZeudtWXKlhaMleq8ML+ZJwEtT2RmkaJvXu6P2sRibbHxAEI1Ra/PQ7Gdn5vro/EhW8P4GjfDTeI8JZW0ZVWfYI/q1',
  'YHbwbhNpjl69Y4QCXTzi1bWl9m47JRpRv75GSKxcfBQEYrpsyySq5yue/skt0NfmhLYELOu9buoKsMOG1IW/yIodQLF3lj+was2n',
  'qweLEM9YOs8KrUaZeSER+Of89LmlKFCOaX2kCxX6OaeCwGOsNNhnpd+Nh29OLRcWmpi5sYNSe0S3qPnNPBFbWC5IH1kadHQYdvdz',
  'cWNs4o+bWAyK4HJGJ7g1xR63gGOu08vkvwzvf9VTnjvrMO8VQw=='
].join('')

const IdpInitiatedLoginUrlSchema = Type.Union([
  Type.String({ minLength: 1, maxLength: 2048, format: 'uri', examples: ['https://app.example.com/sso/start'] }), Type.Null()
], {
  description: 'SAML IdP-initiated sign-in: the application\'s page that starts a sign-in through this connection (an allowed redirect URL, OAUTH_REDIRECT_URLS); ' +
    'the ACS sends an IdP-initiated response\'s browser there with `connection_id`, and signs nobody in with it. null (the default): refused'
})

export const SsoConnectionCreateSchema = Type.Object({
  name: NameSchema,
  ...IdentityProviderFields,
  ...OpenIdProviderFields,
  attribute_mapping: Type.Optional(SsoAttributeMappingSchema),
  role_mapping: Type.Optional(SsoRoleMappingSchema),
  default_role: Type.Optional(OrganizationRoleSchema),
  idp_initiated_login_url: Type.Optional(IdpInitiatedLoginUrlSchema),
  enabled: Type.Optional(Type.Boolean({ default: true }))
}, {
  additionalProperties: false,
  examples: [{
    name: 'Acme Entra ID',
    idp_entity_id: 'https://sts.windows.net/00000000-0000-0000-0000-000000000000/',
    idp_sso_url: 'https://login.microsoftonline.com/00000000-0000-0000-0000-000000000000/saml2',
    idp_certificates: [EXAMPLE_CERTIFICATE],
    role_mapping: { 'Acme Admins': 'admin' }
  }]
})
export type SsoConnectionCreate = Static<typeof SsoConnectionCreateSchema>

export const SsoConnectionUpdateSchema = Type.Object({
  name: Type.Optional(NameSchema),
  ...IdentityProviderFields,
  ...OpenIdProviderFields,
  attribute_mapping: Type.Optional(SsoAttributeMappingSchema),
  role_mapping: Type.Optional(SsoRoleMappingSchema),
  default_role: Type.Optional(OrganizationRoleSchema),
  idp_initiated_login_url: Type.Optional(IdpInitiatedLoginUrlSchema),
  enabled: Type.Optional(Type.Boolean())
}, { additionalProperties: false, examples: [{ name: 'Acme Entra ID', enabled: true }] })
export type SsoConnectionUpdate = Static<typeof SsoConnectionUpdateSchema>

const ConnectionKindSchema = Type.Union([Type.Literal('saml'), Type.Literal('oidc')], {
  description: 'saml: a SAML 2.0 IdP (the idp_ and sp_ fields); oidc: an OpenID provider (the oidc_ fields)'
})
const OrNull = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description })

export const SsoConnectionSchema = Type.Object({
  id: IdSchema,
  organization_id: IdSchema,
  name: Type.String(),
  kind: ConnectionKindSchema,
  enabled: Type.Boolean(),
  idp_entity_id: OrNull(Type.String(), 'SAML: the IdP\'s entity ID'),
  idp_sso_url: OrNull(Type.String(), 'SAML: its SingleSignOnService'),
  idp_certificate_fingerprints: Type.Array(Type.String(), { description: 'SAML: SHA-256 of each signing certificate (none for oidc)' }),
  idp_metadata_url: OrNull(Type.String(), 'Where the IdP\'s metadata is read daily; null when it was given otherwise'),
  idp_metadata_read_at: OrNull(TimestampSchema, 'When that metadata was last read and found usable'),
  sp_entity_id: OrNull(Type.String(), 'SAML: the service\'s entity ID for this connection (give it to the IdP)'),
  acs_url: OrNull(Type.String(), 'SAML: the Assertion Consumer Service (HTTP-POST) to give the IdP'),
  sp_metadata_url: OrNull(Type.String(), 'SAML: the service provider\'s metadata, for IdPs that read it'),
  oidc_issuer: OrNull(Type.String(), 'OpenID: the provider\'s issuer'),
  oidc_client_id: OrNull(Type.String(), 'OpenID: the service\'s client at it (its secret is never shown)'),
  oidc_token_endpoint_auth_method: OrNull(TokenEndpointAuthMethodSchema, 'OpenID: how the client authenticates'),
  oidc_scopes: OrNull(Type.Array(Type.String()), 'OpenID: the scopes asked for'),
  oidc_redirect_uri: OrNull(Type.String(), 'OpenID: the redirect URI to register for the client at the provider'),
  sign_in_url: Type.String({ description: 'Where a browser application sends the person (with redirect_to and a PKCE challenge)' }),
  attribute_mapping: SsoAttributeMappingSchema,
  role_mapping: SsoRoleMappingSchema,
  default_role: OrganizationRoleSchema,
  idp_initiated_login_url: IdpInitiatedLoginUrlSchema,
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'SsoConnection' })
export type SsoConnection = Static<typeof SsoConnectionSchema>

export const SsoConnectionParamsSchema = Type.Object({
  id: IdSchema, connectionId: IdSchema
}, { additionalProperties: false })
export const SsoConnectionIdParamsSchema = Type.Object({ connectionId: IdSchema }, { additionalProperties: false })

/** Home-realm discovery: an address (routed by its verified domain) or an organization's slug. */
export const SsoDiscoveryBodySchema = Type.Object({
  email: Type.Optional(EmailSchema),
  organization: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'An organization\'s slug' }))
}, { additionalProperties: false, examples: [{ email: 'ada@example.com' }] })
export type SsoDiscoveryBody = Static<typeof SsoDiscoveryBodySchema>

export const SsoDiscoverySchema = Type.Object({
  organization: Type.Object({ id: IdSchema, name: Type.String(), slug: Type.String() }),
  connections: Type.Array(Type.Object({
    id: IdSchema, name: Type.String(), kind: ConnectionKindSchema, sign_in_url: Type.String()
  }), { description: 'The organization\'s enabled connections' })
}, { title: 'SsoDiscovery' })
export type SsoDiscovery = Static<typeof SsoDiscoverySchema>

/** What an IdP posts to the ACS (HTTP-POST binding); IdPs may add fields of their own, which are ignored. */
export const SamlAcsBodySchema = Type.Object({
  SAMLResponse: Type.String({ minLength: 1, maxLength: 131_072 }),
  RelayState: Type.Optional(Type.String({ maxLength: 512 }))
}, { additionalProperties: true })
export type SamlAcsBody = Static<typeof SamlAcsBodySchema>

export const SsoConnectionResponseSchema = DataEnvelope(SsoConnectionSchema)
/** An organization's connections, at most SSO_CONNECTIONS_PER_ORGANIZATION: one list, no pages. */
export const SsoConnectionListResponseSchema = component('SsoConnectionListResponse', Type.Object({
  data: Type.Array(component('SsoConnection', SsoConnectionSchema))
}))
export const SsoDiscoveryResponseSchema = DataEnvelope(SsoDiscoverySchema)
