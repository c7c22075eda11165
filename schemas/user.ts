import { Type, type Static } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { DataEnvelope, EXAMPLE_EMAIL, EXAMPLE_PASSWORD, IdSchema, TimestampSchema } from './common.js'
import { component } from './components.js'
import { proofFields } from './proof.js'
import { PermissionSchema, RoleSchema } from './rbac.js'

/**
 * The `email` format as the validators check it (ajv-formats' full mode: a dot in the domain),
 * also given as a pattern, which clients' validators agree on whatever their own `email` is.
 */
export const EMAIL_PATTERN = "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$"
export const EmailSchema = Type.String({ format: 'email', pattern: EMAIL_PATTERN, maxLength: 254, examples: [EXAMPLE_EMAIL] })
/**
 * Shown in messages and lists: printable text on one line, not only spaces (U+0000 is refused
 * for every string, with its own message). Spaces, then a visible character, then the rest: the
 * first two classes are disjoint, so matching takes linear time whatever the input.
 */
export const NameSchema = Type.String({ minLength: 2, maxLength: 100, pattern: '^[^\\S\\u0001-\\u001F\\u007F]*[^\\s\\u0001-\\u001F\\u007F][^\\u0001-\\u001F\\u007F]*$', examples: ['Ada Lovelace'], description: 'No control characters (line breaks included), not only spaces' })
/** E.164: the number SMS codes go to. */
export const PhoneSchema = Type.String({ pattern: '^\\+[1-9][0-9]{6,14}$', examples: ['+14155550123'], description: 'E.164 phone number, for SMS sign-in codes' })
/**
 * 8 to 128 characters, also applied in code to every password (src/security/password-policy.ts);
 * PASSWORD_POLICY=strong adds its checks there (docs/api.md, "Passwords"),
 * and the OpenAPI document publishes the configured policy's rules as the `Password` component.
 */
export const PASSWORD_LENGTH = { minLength: 8, maxLength: 128 }
export const PasswordSchema = component('Password', Type.String({ ...PASSWORD_LENGTH, examples: [EXAMPLE_PASSWORD] }))

/** The public user; password and hashes are not part of any response (docs/api.md, "Users"). */
export const UserSchema = Type.Object({
  id: IdSchema,
  email: EmailSchema,
  email_verified: Type.Boolean({ description: 'True once a message sent to the address was answered (its verification or reset link)' }),
  name: Type.String(),
  created_at: TimestampSchema
}, { title: 'User' })
export type User = Static<typeof UserSchema>

export const USER_FIELDS = {
  sortable: ['email', 'name', 'created_at'],
  selectable: ['email', 'email_verified', 'name', 'created_at'],
  searchIn: 'the name'
} as const

export const UserListItemSchema = ListItem(UserSchema, 'UserListItem')

export const UserCreateBodySchema = Type.Object({
  email: EmailSchema,
  name: NameSchema,
  password: PasswordSchema
}, { additionalProperties: false })
export type UserCreateBody = Static<typeof UserCreateBodySchema>

/** A new password, e-mail address or phone number is a sensitive change: it carries a proof, or follows a step-up. */
const passwordChange = {
  password: Type.Optional(PasswordSchema),
  ...proofFields
}

/** PUT: full replacement of the writable fields. */
/** Setting another number (or null) turns SMS codes off until they are enabled again. */
const phone = { phone: Type.Optional(Type.Union([PhoneSchema, Type.Null()])) }

export const UserReplaceBodySchema = Type.Object({
  email: EmailSchema,
  name: NameSchema,
  ...phone,
  ...passwordChange
}, { additionalProperties: false })

export const UserPatchBodySchema = Type.Object({
  email: Type.Optional(EmailSchema),
  name: Type.Optional(NameSchema),
  ...phone,
  ...passwordChange
}, { additionalProperties: false })
export type UserChanges = Static<typeof UserPatchBodySchema>

/** `GET /auth/me`: the caller with their roles, permissions and MFA state. */
export const MeSchema = Type.Composite([
  UserSchema,
  Type.Object({
    roles: Type.Array(RoleSchema),
    permissions: Type.Array(PermissionSchema),
    mfa_enabled: Type.Boolean({ description: 'A second factor is on' }),
    mfa_methods: Type.Array(Type.Union([Type.Literal('totp'), Type.Literal('email'), Type.Literal('sms')]), { description: 'The second factors that are on' }),
    phone: Type.Union([PhoneSchema, Type.Null()])
  })
], { title: 'Me' })

/** Named response envelopes (components of the OpenAPI document). */
export const UserCollectionSchema = CollectionEnvelope(UserListItemSchema)
export const MeResponseSchema = DataEnvelope(MeSchema)
export const UserResponseSchema = DataEnvelope(UserSchema)
