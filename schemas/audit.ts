import { Type, type Static } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { CANONICAL_UUID, IdSchema, TimestampSchema } from './common.js'

/** The security events written to the audit log (docs/api.md, "Audit log"). */
export const AUDIT_EVENTS = [
  'auth.login', 'auth.login_failed', 'auth.mfa_verified', 'auth.mfa_failed', 'auth.refresh', 'auth.token_reused',
  'auth.logout', 'session.ended', 'auth.oauth_login', 'mfa.enabled', 'mfa.disabled', 'mfa.reset', 'user.created', 'user.updated', 'user.deleted',
  'role.assigned', 'role.removed', 'device.added', 'device.removed', 'access.evaluated', 'rate_limit.exceeded',
  'email.verification_sent', 'email.verified', 'email.changed', 'auth.password_reset_requested', 'auth.email_sign_in_requested', 'auth.password_reset', 'mfa.code_sent', 'mfa.backup_codes_replaced',
  'passkey.added', 'passkey.removed', 'passkey.renamed', 'identity.linked', 'identity.unlinked', 'account.claimed', 'auth.reauthenticated',
  'job.failed', 'organization.created', 'organization.updated', 'organization.deleted', 'organization.accessed_as_super_admin',
  'membership.added', 'membership.role_changed', 'membership.removed', 'membership.left', 'invitation.created',
  'invitation.revoked', 'auth.organization_selected', 'webhook.created', 'webhook.updated', 'webhook.deleted',
  'webhook.secret_rotated', 'webhook.tested', 'webhook.delivery_retried', 'webhook.disabled', 'password.breached',
  'password.breach_check_failed', 'user.suspended', 'user.suspension_lifted', 'user.exported',
  'user.impersonated', 'impersonation.request', 'user.deletion_scheduled', 'oauth_client.created', 'oauth_client.updated',
  'oauth_client.secret_rotated', 'oauth_client.deleted', 'authorization_grant.revoked', 'domain.claimed', 'domain.verified',
  'domain.removed', 'domain.updated', 'sso_connection.created', 'sso_connection.updated', 'sso_connection.deleted', 'sso_connection.metadata_unreadable',
  'scim_directory.created', 'scim_directory.updated', 'scim_directory.token_rotated', 'scim_directory.deleted', 'scim.user_created',
  'scim.user_updated', 'scim.user_deactivated', 'scim.user_reactivated', 'scim.user_deleted', 'scim.group_created',
  'scim.group_updated', 'scim.group_deleted', 'api_key.created', 'api_key.deleted'
] as const
export type AuditEvent = typeof AUDIT_EVENTS[number]

export const AuditEntrySchema = Type.Object({
  id: IdSchema,
  event: Type.Unsafe<AuditEvent>(Type.String({ enum: [...AUDIT_EVENTS] })),
  actor_id: Type.Union([Type.String(), Type.Null()]),
  target_id: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'Event details, redacted' }),
  created_at: TimestampSchema
}, { title: 'AuditEntry' })
export type AuditEntry = Static<typeof AuditEntrySchema>

export const AUDIT_FIELDS = {
  sortable: ['event', 'created_at'],
  selectable: ['event', 'actor_id', 'target_id', 'ip', 'user_agent', 'outcome', 'details', 'created_at'],
  searchIn: null
} as const

export const AuditListItemSchema = ListItem(AuditEntrySchema, 'AuditListItem')

export const AuditFiltersSchema = {
  event: Type.Optional(Type.Unsafe<AuditEvent>(Type.String({ enum: [...AUDIT_EVENTS] }))),
  // A user's id in any spelling finds their entries; other text is compared as it is.
  actor_id: Type.Optional(Type.String({ maxLength: 64, [CANONICAL_UUID]: true }))
}

/** Named response envelopes (components of the OpenAPI document). */
export const AuditCollectionSchema = CollectionEnvelope(AuditListItemSchema)
