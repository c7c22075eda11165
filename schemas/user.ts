import { Type, type Static } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { IdSchema, TimestampSchema, DataEnvelope } from './common.js'
import { PermissionSchema, RoleSchema } from './rbac.js'

export const EmailSchema = Type.String({ format: 'email', maxLength: 254 })
export const NameSchema = Type.String({ minLength: 2, maxLength: 100, pattern: '\\S' })
/** 8 to 128 characters; PASSWORD_POLICY=strong adds its checks in code (docs/api.md, "Passwords"). */
export const PasswordSchema = Type.String({ minLength: 8, maxLength: 128 })

/** The public user; password and hashes are not part of any response (docs/api.md, "Users"). */
export const UserSchema = Type.Object({
  id: IdSchema,
  email: EmailSchema,
  name: Type.String(),
  created_at: TimestampSchema
}, { title: 'User' })
export type User = Static<typeof UserSchema>

export const USER_FIELDS = {
  sortable: ['email', 'name', 'created_at'],
  selectable: ['email', 'name', 'created_at'],
  searchIn: 'the name'
} as const

export const UserListItemSchema = ListItem(UserSchema, 'UserListItem')

export const UserCreateBodySchema = Type.Object({
  email: EmailSchema,
  name: NameSchema,
  password: PasswordSchema
}, { additionalProperties: false })
export type UserCreateBody = Static<typeof UserCreateBodySchema>

const passwordChange = {
  password: Type.Optional(PasswordSchema),
  current_password: Type.Optional(Type.String({
    maxLength: 128,
    description: 'Required when changing one\'s own password'
  }))
}

/** PUT: full replacement of the writable fields. */
export const UserReplaceBodySchema = Type.Object({
  email: EmailSchema,
  name: NameSchema,
  ...passwordChange
}, { additionalProperties: false })

export const UserPatchBodySchema = Type.Object({
  email: Type.Optional(EmailSchema),
  name: Type.Optional(NameSchema),
  ...passwordChange
}, { additionalProperties: false })
export type UserChanges = Static<typeof UserPatchBodySchema>

/** `GET /auth/me`: the caller with their roles, permissions and MFA state. */
export const MeSchema = Type.Composite([
  UserSchema,
  Type.Object({
    roles: Type.Array(RoleSchema),
    permissions: Type.Array(PermissionSchema),
    mfa_enabled: Type.Boolean()
  })
], { title: 'Me' })

/** Named response envelopes (components of the OpenAPI document). */
export const UserCollectionSchema = CollectionEnvelope(UserListItemSchema)
export const MeResponseSchema = DataEnvelope(MeSchema)
export const UserResponseSchema = DataEnvelope(UserSchema)
