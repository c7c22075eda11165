import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { AuditEntrySchema } from './audit.js'
import { IdentitySchema, SessionSchema } from './auth.js'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { component } from './components.js'
import { DeviceSchema } from './devices.js'
import { OrganizationRoleSchema, OrganizationSchema } from './organizations.js'
import { PasskeySchema } from './passkeys.js'
import { CommentSchema, PostSchema } from './post.js'
import { SuspensionSchema } from './suspension.js'
import { MeSchema } from './user.js'

/**
 * How many items each list of an export holds at most, the latest first (docs/api.md, "Account
 * export"): the document stays bounded however long the account has been used, at a few
 * megabytes (posts, up to 5000 characters each, are the largest items). `truncated` names the
 * lists that had more.
 */
export const EXPORT_LIMITS = {
  sessions: 1000,
  devices: 100,
  identities: 100,
  passkeys: 100,
  memberships: 1000,
  posts: 500,
  comments: 1000,
  audit_entries: 1000
} as const
export type ExportSection = keyof typeof EXPORT_LIMITS
export const EXPORT_SECTIONS = Object.keys(EXPORT_LIMITS) as ExportSection[]

/** One list of the export: the component's items, at most the section's limit, as the description says. */
function Section<T extends TSchema> (section: ExportSection, item: T, what: string) {
  const limit = EXPORT_LIMITS[section]
  return Type.Array(item, { maxItems: limit, description: `${what}; at most the latest ${limit} (see \`truncated\`)` })
}

/**
 * The suspension as its holder may see it: when and until when. Why and by whom are for
 * administrators (docs/api.md, "Suspension"), and stay out of the export.
 */
const ExportSuspensionSchema = Type.Pick(SuspensionSchema, ['suspended_at', 'until'], { title: 'AccountExportSuspension' })

/** The profile: `GET /auth/me`'s answer and the account's suspension, past or in force. */
const ExportUserSchema = Type.Composite([
  MeSchema,
  Type.Object({
    suspension: Type.Union([ExportSuspensionSchema, Type.Null()], { description: 'The last suspension, in force or past its end; null when none (or lifted)' })
  })
], { title: 'AccountExportUser' })

/** A session, ended ones too: when and why it ended. Never its refresh tokens nor their hashes. */
const ExportSessionSchema = Type.Composite([
  SessionSchema,
  Type.Object({
    revoked_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When it ended by revocation; null while live (or timed out)' }),
    revoked_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it ended: logout, reuse, ended_by_user, concurrency_limit, password_changed, …' })
  })
], { title: 'AccountExportSession' })
export type ExportSession = Static<typeof ExportSessionSchema>

/** A linked identity with what the provider said of the account: never a provider's token. */
const ExportIdentitySchema = Type.Composite([
  IdentitySchema,
  Type.Object({
    subject: Type.String({ description: 'The account\'s identifier at the provider' }),
    email: Type.Union([Type.String(), Type.Null()], { description: 'The address the provider gave when the identity was linked' })
  })
], { title: 'AccountExportIdentity' })
export type ExportIdentity = Static<typeof ExportIdentitySchema>

/** A membership: the organization, the caller's role in it, and when they joined. */
const ExportMembershipSchema = Type.Composite([
  Type.Object({ organization_id: IdSchema }),
  Type.Pick(OrganizationSchema, ['name', 'slug']),
  Type.Object({
    role: OrganizationRoleSchema,
    joined_at: TimestampSchema
  })
], { title: 'AccountExportMembership' })
export type ExportMembership = Static<typeof ExportMembershipSchema>

/**
 * Everything the service stores about the caller (docs/api.md, "Account export"): each item as
 * the API shows it elsewhere, so no password, hash, token, TOTP secret, backup code or passkey
 * public key is part of it.
 */
export const AccountExportSchema = Type.Object({
  exported_at: TimestampSchema,
  user: ExportUserSchema,
  sessions: Section('sessions', ExportSessionSchema, 'The account\'s sessions, ended ones included, newest first'),
  devices: Section('devices', component('TrustedDevice', DeviceSchema), 'Trusted devices, newest first'),
  identities: Section('identities', ExportIdentitySchema, 'Linked provider identities, newest first'),
  passkeys: Section('passkeys', component('Passkey', PasskeySchema), 'Passkeys (their names and use, never their keys), newest first'),
  memberships: Section('memberships', ExportMembershipSchema, 'Organization memberships, latest joined first'),
  posts: Section('posts', component('Post', PostSchema), 'Posts the account wrote, every status, newest first'),
  comments: Section('comments', component('Comment', CommentSchema), 'Comments the account wrote, newest first'),
  audit_entries: Section('audit_entries', component('AuditEntry', AuditEntrySchema), 'Audit log entries whose actor is the account (what it did, and the sign-ins refused on its credentials), newest first'),
  truncated: Type.Array(Type.Unsafe<ExportSection>(Type.String({ enum: [...EXPORT_SECTIONS] })), {
    uniqueItems: true,
    description: 'The lists that hold only their latest items: the account has more than the limit of each'
  })
}, { title: 'AccountExport' })
export type AccountExport = Static<typeof AccountExportSchema>

export const AccountExportResponseSchema = DataEnvelope(AccountExportSchema)
