import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { component } from './components.js'
import { ORGANIZATION_PERMISSIONS, type OrganizationPermission, OrganizationRoleSchema } from './organizations.js'
import { proofFields } from './proof.js'
import { PERMISSIONS, type Permission } from './rbac.js'

/**
 * What an API key may use (docs/api.md, "API keys"): permissions of the role table and of the
 * organization role table. A key never holds more than its owner: a person's key what the
 * person holds at the time of the request, an organization's key what its role grants.
 */
export const API_KEY_SCOPES = [...PERMISSIONS, ...ORGANIZATION_PERMISSIONS] as const
export type ApiKeyScope = Permission | OrganizationPermission

const ScopeSchema = Type.Unsafe<ApiKeyScope>(Type.String({ enum: [...API_KEY_SCOPES], title: 'ApiKeyScope' }))
const ScopesSchema = Type.Array(ScopeSchema, { minItems: 1, maxItems: API_KEY_SCOPES.length, uniqueItems: true })

const NameSchema = Type.String({
  minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$', examples: ['CI deploys'], description: 'Without control characters'
})
const ExpirySchema = Type.String({
  format: 'date-time', examples: ['2027-06-30T00:00:00Z'], description: 'When the key stops working; omitted: never (delete it to stop it)'
})

export const ApiKeyCreateSchema = Type.Object({
  name: NameSchema,
  scopes: { ...ScopesSchema, description: 'Permissions the key may use, each one you hold (organization permissions count where you are a member)' },
  expires_at: Type.Optional(ExpirySchema),
  ...proofFields
}, { additionalProperties: false, examples: [{ name: 'CI deploys', scopes: ['read', 'create'], expires_at: '2027-06-30T00:00:00Z' }] })
export type ApiKeyCreate = Static<typeof ApiKeyCreateSchema>

export const OrganizationApiKeyCreateSchema = Type.Object({
  name: NameSchema,
  role: { ...OrganizationRoleSchema, description: 'The organization role the key acts with: at most your own' },
  scopes: Type.Optional({ ...ScopesSchema, description: 'Organization permissions of the role the key may use; omitted: all of them' }),
  expires_at: Type.Optional(ExpirySchema),
  ...proofFields
}, { additionalProperties: false, examples: [{ name: 'Directory sync', role: 'admin', scopes: ['members:read', 'members:invite'] }] })
export type OrganizationApiKeyCreate = Static<typeof OrganizationApiKeyCreateSchema>

const apiKeyFields = {
  id: IdSchema,
  name: Type.String(),
  prefix: Type.String({
    description: 'The key\'s first 36 characters, `uak_` and its id, to recognise it (the key itself is shown once)',
    examples: ['uak_0193a5c2e7f07c3a9d1e2f3a4b5c6d7e']
  }),
  scopes: Type.Array(ScopeSchema),
  user_id: Type.Union([IdSchema, Type.Null()], { description: 'The person the key acts as; null for an organization\'s key' }),
  organization_id: Type.Union([IdSchema, Type.Null()], { description: 'The organization whose key it is; null for a person\'s key' }),
  role: Type.Union([OrganizationRoleSchema, Type.Null()], { description: 'The organization role an organization\'s key acts with' }),
  created_at: TimestampSchema,
  expires_at: Type.Union([TimestampSchema, Type.Null()]),
  last_used_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When a request last used it, to the minute' })
}
export const ApiKeySchema = Type.Object(apiKeyFields, { title: 'ApiKey' })
export type ApiKey = Static<typeof ApiKeySchema>

export const ApiKeyWithSecretSchema = Type.Object({
  ...apiKeyFields,
  key: Type.String({
    description: 'The key, for `Authorization: Bearer`: shown this once, kept only as its hash',
    examples: ['uak_0193a5c2e7f07c3a9d1e2f3a4b5c6d7e_wtXs3kmfTgYtvsiMbIcECW7ErcD1HaTY3Rr0wU']
  })
}, { title: 'ApiKeyWithSecret' })
export type ApiKeyWithSecret = Static<typeof ApiKeyWithSecretSchema>

export const OrganizationApiKeyParamsSchema = Type.Object({
  id: IdSchema, keyId: IdSchema
}, { additionalProperties: false })

export const ApiKeyWithSecretResponseSchema = DataEnvelope(ApiKeyWithSecretSchema)
export const ApiKeyListResponseSchema = component('ApiKeyListResponse', Type.Object({
  data: Type.Array(component('ApiKey', ApiKeySchema))
}))
