import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { component } from './components.js'
import { OrganizationRoleSchema } from './organizations.js'

/** The SCIM 2.0 schema URNs the service speaks (RFC 7643, RFC 7644). */
export const SCIM = {
  user: 'urn:ietf:params:scim:schemas:core:2.0:User',
  group: 'urn:ietf:params:scim:schemas:core:2.0:Group',
  enterpriseUser: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User',
  listResponse: 'urn:ietf:params:scim:api:messages:2.0:ListResponse',
  patchOp: 'urn:ietf:params:scim:api:messages:2.0:PatchOp',
  error: 'urn:ietf:params:scim:api:messages:2.0:Error',
  serviceProviderConfig: 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig',
  resourceType: 'urn:ietf:params:scim:schemas:core:2.0:ResourceType',
  schema: 'urn:ietf:params:scim:schemas:core:2.0:Schema'
} as const

/** SCIM's media type; plain JSON is taken too (docs/api.md, "SCIM provisioning"). */
export const SCIM_MEDIA_TYPE = 'application/scim+json'

// ---- The organization's directories (the service's own API) ----

const NameSchema = Type.String({
  minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$', examples: ['Acme Entra ID'], description: 'Without control characters'
})

/** A group's display name, to the organization role its members get; the highest role of a person's groups wins. */
const GroupRoleMappingSchema = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), OrganizationRoleSchema, {
  maxProperties: 100, examples: [{ 'Acme Admins': 'admin' }]
})

export const ScimDirectoryCreateSchema = Type.Object({
  name: NameSchema,
  role_mapping: Type.Optional(GroupRoleMappingSchema),
  default_role: Type.Optional(OrganizationRoleSchema)
}, { additionalProperties: false, examples: [{ name: 'Acme Entra ID', role_mapping: { 'Acme Admins': 'admin' } }] })
export type ScimDirectoryCreate = Static<typeof ScimDirectoryCreateSchema>

export const ScimDirectoryUpdateSchema = Type.Object({
  name: Type.Optional(NameSchema),
  role_mapping: Type.Optional(GroupRoleMappingSchema),
  default_role: Type.Optional(OrganizationRoleSchema)
}, { additionalProperties: false, examples: [{ role_mapping: { 'Acme Admins': 'admin', 'Acme Owners': 'owner' } }] })
export type ScimDirectoryUpdate = Static<typeof ScimDirectoryUpdateSchema>

const directoryFields = {
  id: IdSchema,
  organization_id: IdSchema,
  name: Type.String(),
  base_url: Type.String({ description: 'The SCIM base URL to give the identity provider (its tenant URL)' }),
  role_mapping: GroupRoleMappingSchema,
  default_role: OrganizationRoleSchema,
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}

export const ScimDirectorySchema = Type.Object(directoryFields, { title: 'ScimDirectory' })
export type ScimDirectory = Static<typeof ScimDirectorySchema>

export const ScimDirectoryWithTokenSchema = Type.Object({
  ...directoryFields,
  token: Type.String({ description: 'The bearer token the identity provider sends: shown this once, kept only as its hash' })
}, { title: 'ScimDirectoryWithToken' })
export type ScimDirectoryWithToken = Static<typeof ScimDirectoryWithTokenSchema>

export const ScimDirectoryParamsSchema = Type.Object({
  id: IdSchema, directoryId: IdSchema
}, { additionalProperties: false })
export const ScimDirectoryResponseSchema = DataEnvelope(ScimDirectorySchema)
export const ScimDirectoryWithTokenResponseSchema = DataEnvelope(ScimDirectoryWithTokenSchema)
export const ScimDirectoryListResponseSchema = component('ScimDirectoryListResponse', Type.Object({
  data: Type.Array(component('ScimDirectory', ScimDirectorySchema))
}))

// ---- SCIM 2.0 itself (RFC 7643, RFC 7644), as identity providers send it ----

const Text = (maxLength: number, options: object = {}) => Type.String({ maxLength, ...options })
/**
 * Entra ID sends booleans as the strings "True" and "False" in PATCH values and sometimes in
 * bodies (its documented requests): both spellings are taken.
 */
export const ScimBooleanSchema = Type.Union([Type.Boolean(), Type.String({ pattern: '^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$' })])

const SchemasSchema = Type.Array(Text(200), { maxItems: 10 })
const MultiValueSchema = Type.Object({
  value: Type.Optional(Text(1024)),
  type: Type.Optional(Text(100)),
  primary: Type.Optional(ScimBooleanSchema),
  display: Type.Optional(Text(256))
}, { additionalProperties: true })

/**
 * A User as a directory writes it: `userName` required, the rest kept as sent (an IdP reads back
 * what it wrote), bounded; `password` is taken and dropped (people sign in through SSO).
 */
export const ScimUserInputSchema = Type.Object({
  schemas: Type.Optional(SchemasSchema),
  userName: Text(256, { minLength: 1 }),
  externalId: Type.Optional(Type.Union([Text(256), Type.Null()])),
  active: Type.Optional(ScimBooleanSchema),
  displayName: Type.Optional(Type.Union([Text(256), Type.Null()])),
  name: Type.Optional(Type.Object({
    formatted: Type.Optional(Text(256)),
    givenName: Type.Optional(Text(256)),
    familyName: Type.Optional(Text(256)),
    middleName: Type.Optional(Text(256))
  }, { additionalProperties: true })),
  emails: Type.Optional(Type.Array(MultiValueSchema, { maxItems: 20 })),
  password: Type.Optional(Text(1024))
}, {
  additionalProperties: true,
  maxProperties: 50,
  examples: [{
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'ada@example.com',
    externalId: '00u1abcd',
    name: { givenName: 'Ada', familyName: 'Lovelace' },
    emails: [{ primary: true, value: 'ada@example.com', type: 'work' }],
    active: true
  }]
})
export type ScimUserInput = Static<typeof ScimUserInputSchema>

export const ScimGroupInputSchema = Type.Object({
  schemas: Type.Optional(SchemasSchema),
  displayName: Text(256, { minLength: 1 }),
  externalId: Type.Optional(Type.Union([Text(256), Type.Null()])),
  members: Type.Optional(Type.Array(MultiValueSchema, { maxItems: 10_000 }))
}, {
  additionalProperties: true,
  maxProperties: 20,
  examples: [{ schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Acme Admins', members: [] }]
})
export type ScimGroupInput = Static<typeof ScimGroupInputSchema>

export const ScimPatchSchema = Type.Object({
  schemas: Type.Optional(SchemasSchema),
  Operations: Type.Array(Type.Object({
    op: Type.String({ pattern: '^(?:[Aa][Dd][Dd]|[Rr][Ee][Mm][Oo][Vv][Ee]|[Rr][Ee][Pp][Ll][Aa][Cc][Ee])$', description: 'add, remove or replace (any case)' }),
    path: Type.Optional(Text(1000)),
    value: Type.Optional(Type.Unknown())
  }, { additionalProperties: true }), { minItems: 1, maxItems: 1000 })
}, {
  additionalProperties: true,
  examples: [{ schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] }]
})
export type ScimPatch = Static<typeof ScimPatchSchema>

/** At most this many resources a page (RFC 7644 §3.4.2.4 `count`). */
export const SCIM_MAX_COUNT = 100

export const ScimListQuerySchema = Type.Object({
  filter: Type.Optional(Text(1000, { description: 'eq, co or sw on userName, externalId or displayName; `and` of them' })),
  // RFC 7644 §3.4.2.4: a startIndex below 1 is read as 1 and a negative count as 0, not refused.
  startIndex: Type.Optional(Type.Integer({ minimum: -1_000_000_000, maximum: 1_000_000_000, default: 1, description: 'From 1; less is read as 1' })),
  count: Type.Optional(Type.Integer({
    minimum: -1_000_000_000, maximum: 1_000_000_000, description: `Page size, at most ${SCIM_MAX_COUNT}; less than 0 is read as 0`
  })),
  attributes: Type.Optional(Text(1000)),
  excludedAttributes: Type.Optional(Text(1000, { description: '`members` leaves groups\' members out' }))
}, { additionalProperties: false })
export type ScimListQuery = Static<typeof ScimListQuerySchema>

/** A resource's id as an IdP sends it back: anything but one of the service's ids is not found (404), not invalid. */
export const ScimResourceParamsSchema = Type.Object({
  directoryId: IdSchema, resourceId: Type.String({ minLength: 1, maxLength: 200, examples: ['0193b5a2-7c1e-7d40-9a6b-2f1c8e4d3a90'] })
}, { additionalProperties: false })
export const ScimDirectoryPathSchema = Type.Object({ directoryId: IdSchema }, { additionalProperties: false })

const MetaSchema = Type.Object({
  resourceType: Type.String(),
  created: TimestampSchema,
  lastModified: TimestampSchema,
  location: Type.String()
})

/** A User as the service answers it: what the directory wrote, with its id, `active` and `meta`. */
export const ScimUserSchema = Type.Object({
  schemas: Type.Array(Type.String()),
  id: IdSchema,
  userName: Type.String(),
  active: Type.Boolean(),
  meta: MetaSchema
}, { additionalProperties: true, title: 'ScimUser' })
export type ScimUser = Static<typeof ScimUserSchema>

export const ScimGroupSchema = Type.Object({
  schemas: Type.Array(Type.String()),
  id: IdSchema,
  displayName: Type.String(),
  externalId: Type.Optional(Type.String()),
  members: Type.Optional(Type.Array(Type.Object({ value: IdSchema, display: Type.Optional(Type.String()) }))),
  meta: MetaSchema
}, { title: 'ScimGroup' })
export type ScimGroup = Static<typeof ScimGroupSchema>

function ListResponse<T extends TSchema> (title: string, item: T) {
  return component(title, Type.Object({
    schemas: Type.Array(Type.String()),
    totalResults: Type.Integer(),
    startIndex: Type.Integer(),
    itemsPerPage: Type.Integer(),
    Resources: Type.Array(item)
  }, { title }))
}

export const ScimUserListSchema = ListResponse('ScimUserList', component('ScimUser', ScimUserSchema))
export const ScimGroupListSchema = ListResponse('ScimGroupList', component('ScimGroup', ScimGroupSchema))
export const ScimUserResponseSchema = component('ScimUser', ScimUserSchema)
export const ScimGroupResponseSchema = component('ScimGroup', ScimGroupSchema)

/** SCIM's error body (RFC 7644 §3.12): every error of the SCIM routes answers in it. */
export const ScimErrorSchema = component('ScimError', Type.Object({
  schemas: Type.Array(Type.String()),
  status: Type.String({ description: 'The HTTP status, as a string' }),
  scimType: Type.Optional(Type.String({ description: 'invalidFilter, invalidValue, invalidSyntax, uniqueness, mutability, noTarget, tooMany' })),
  detail: Type.String()
}, { title: 'ScimError' }))
export type ScimErrorBody = Static<typeof ScimErrorSchema>

/** The discovery documents (RFC 7644 §4): fixed, described by their own schemas. */
export const ScimDiscoverySchema = Type.Object({ schemas: Type.Array(Type.String()) }, { additionalProperties: true })
