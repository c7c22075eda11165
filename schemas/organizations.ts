import { type Static, Type } from '@sinclair/typebox'
import { CollectionEnvelope, ListItem } from './collection.js'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { EmailSchema } from './user.js'

/**
 * Organization roles, lowest first (docs/api.md, "Organizations"): each holds the permissions of
 * those below it and more.
 */
export const ORGANIZATION_ROLES = ['member', 'admin', 'owner'] as const
export type OrganizationRole = typeof ORGANIZATION_ROLES[number]

export const ORGANIZATION_PERMISSIONS = [
  'org:read', 'org:update', 'org:delete', 'members:read', 'members:invite', 'members:update', 'members:remove', 'sso:manage'
] as const
export type OrganizationPermission = typeof ORGANIZATION_PERMISSIONS[number]

export const OrganizationRoleSchema = Type.Unsafe<OrganizationRole>(Type.String({
  enum: [...ORGANIZATION_ROLES], title: 'OrganizationRole', examples: ['member']
}))

/** URL-safe: lower-case letters, digits and inner hyphens, as in a DNS label. */
const SlugSchema = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$',
  examples: ['acme'],
  description: 'Unique, URL-safe: lower-case letters, digits and inner hyphens'
})
/** Shown in messages' subjects and bodies: no control characters. */
const OrganizationNameSchema = Type.String({
  minLength: 1, maxLength: 100, pattern: '^[^\\u0000-\\u001f\\u007f]+$', examples: ['Acme Corporation'], description: 'Without control characters'
})

export const OrganizationSchema = Type.Object({
  id: IdSchema,
  name: Type.String(),
  slug: Type.String(),
  role: Type.Union([OrganizationRoleSchema, Type.Null()], {
    description: 'The caller\'s role in the organization; null for a global administrator who is not a member'
  }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'Organization' })
export type Organization = Static<typeof OrganizationSchema>

export const OrganizationCreateSchema = Type.Object({
  name: OrganizationNameSchema,
  slug: SlugSchema
}, { additionalProperties: false })
export type OrganizationCreate = Static<typeof OrganizationCreateSchema>

export const OrganizationUpdateSchema = Type.Object({
  name: Type.Optional(OrganizationNameSchema),
  slug: Type.Optional(SlugSchema)
}, { additionalProperties: false })
export type OrganizationUpdate = Static<typeof OrganizationUpdateSchema>

export const ORGANIZATION_FIELDS = {
  sortable: ['name', 'slug', 'created_at'],
  selectable: ['name', 'slug', 'role', 'created_at', 'updated_at'],
  searchIn: 'the name and the slug'
} as const

/** A member: the user's id, address and name, with their role and when they joined. */
export const MemberSchema = Type.Object({
  id: IdSchema,
  email: EmailSchema,
  name: Type.String(),
  role: OrganizationRoleSchema,
  created_at: Type.String({ format: 'date-time', description: 'When the user joined (ISO 8601 UTC)' })
}, { title: 'OrganizationMember' })
export type Member = Static<typeof MemberSchema>

export const MemberUpdateSchema = Type.Object({ role: OrganizationRoleSchema }, { additionalProperties: false })
export type MemberUpdate = Static<typeof MemberUpdateSchema>

export const MEMBER_FIELDS = {
  sortable: ['created_at'],
  selectable: ['email', 'name', 'role', 'created_at'],
  searchIn: 'the address and the name'
} as const

/** A pending invitation; its token is only ever in the message sent to the address. */
export const InvitationSchema = Type.Object({
  id: IdSchema,
  email: EmailSchema,
  role: OrganizationRoleSchema,
  invited_by: Type.Union([IdSchema, Type.Null()], { description: 'Who invited, while that account exists' }),
  created_at: TimestampSchema,
  expires_at: TimestampSchema
}, { title: 'OrganizationInvitation' })
export type Invitation = Static<typeof InvitationSchema>

export const InvitationCreateSchema = Type.Object({
  email: EmailSchema,
  role: OrganizationRoleSchema
}, { additionalProperties: false })
export type InvitationCreate = Static<typeof InvitationCreateSchema>

export const INVITATION_FIELDS = {
  sortable: ['email', 'created_at', 'expires_at'],
  selectable: ['email', 'role', 'invited_by', 'created_at', 'expires_at'],
  searchIn: 'the address'
} as const

export const InvitationAcceptSchema = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 256, description: 'The token of the invitation message' })
}, { additionalProperties: false })

export const MemberParamsSchema = Type.Object({ id: IdSchema, userId: IdSchema }, { additionalProperties: false })
export const InvitationParamsSchema = Type.Object({
  id: IdSchema, invitationId: IdSchema
}, { additionalProperties: false })

/** Selecting the session's organization: a refresh that also says which organization its tokens speak for. */
export const OrganizationSelectionSchema = Type.Object({
  refresh_token: Type.String({ minLength: 1, maxLength: 4096 }),
  organization_id: Type.Union([IdSchema, Type.Null()], { description: 'The organization; null for none' })
}, { additionalProperties: false })

export const OrganizationResponseSchema = DataEnvelope(OrganizationSchema)
export const OrganizationCollectionSchema = CollectionEnvelope(ListItem(OrganizationSchema, 'OrganizationListItem'))
export const MemberResponseSchema = DataEnvelope(MemberSchema)
export const MemberCollectionSchema = CollectionEnvelope(ListItem(MemberSchema, 'OrganizationMemberListItem'))
export const InvitationResponseSchema = DataEnvelope(InvitationSchema)
export const InvitationCollectionSchema = CollectionEnvelope(ListItem(InvitationSchema, 'OrganizationInvitationListItem'))
