import type { AuditEvent } from '../../../schemas/audit.js'
import type { WebhookEventData, WebhookEventType } from '../../../schemas/webhooks.js'
import { auditEntryOf } from '../../store/audit-logs.js'
import type { AuditLogsTable } from '../../store/types.js'

/** One event of the catalogue (docs/api.md, "Webhooks"), as its data. */
export type WebhookEvent = { [T in WebhookEventType]: { type: T, data: WebhookEventData<T> } }[WebhookEventType]

type Details = Record<string, unknown>
type Row = Pick<AuditLogsTable, 'actor_id' | 'target_id'>

const text = (value: unknown): string => typeof value === 'string' ? value : ''
const texts = (value: unknown): string[] => Array.isArray(value) ? value.filter((item) => typeof item === 'string') : []
/** The account an event is about and who changed it, as most events carry them. */
const userAndActor = (row: Row) => ({ user_id: text(row.target_id), actor_id: row.actor_id })
/** The organization's domain an event is about, and who changed it. */
const domainOf = (row: Row, details: Details) => ({
  organization_id: text(details.organization_id),
  domain_id: text(details.domain_id),
  domain: text(details.domain),
  actor_id: row.actor_id
})
/** The organization's SSO connection an event is about, and who changed it. */
const connectionOf = (row: Row, details: Details) => ({
  organization_id: text(details.organization_id), connection_id: text(details.connection_id), actor_id: row.actor_id
})
/** The organization's SCIM directory an event is about, and who changed it (null: the directory itself). */
const directoryOf = (row: Row, details: Details) => ({
  organization_id: text(details.organization_id), directory_id: text(details.directory_id), actor_id: row.actor_id
})
/** The API key an event is about: a person's (the entry's target) or an organization's. */
const apiKeyOf = (row: Row, details: Details) => ({
  api_key_id: text(details.credential_id),
  user_id: row.target_id,
  organization_id: typeof details.organization_id === 'string' ? details.organization_id : null,
  actor_id: row.actor_id
})
const scimUserOf = (row: Row, details: Details) => ({
  ...directoryOf(row, details), user_id: text(row.target_id), scim_user_id: text(details.scim_user_id)
})
const count = (value: unknown) => typeof value === 'number' ? value : 0
const scimGroupOf = (row: Row, details: Details) => ({
  ...directoryOf(row, details),
  group_id: text(details.group_id),
  members_added: count(details.members_added),
  members_removed: count(details.members_removed)
})
const role = (value: unknown) => text(value) as WebhookEventData<'membership.added'>['role']

/** The events an audited change is told to endpoints as: by its audit event, from its row. */
const FROM_AUDIT: Partial<Record<AuditEvent, (row: Row, details: Details) => WebhookEvent[]>> = {
  'user.created': (row, details) => [{
    type: 'user.created', data: { ...userAndActor(row), provider: details.provider === undefined ? null : text(details.provider) }
  }],
  'user.updated': (row, details) => {
    const changed = texts(details.changed)
    const user = userAndActor(row)
    return [
      { type: 'user.updated', data: { ...user, changed } },
      ...changed.includes('password') ? [{ type: 'user.password_changed' as const, data: { ...user, reset: false } }] : []
    ]
  },
  // Deleting an account that did not exist succeeds, and is audited, but changed nothing.
  'user.deleted': (row, details) => details.existed === false
    ? []
    : [{ type: 'user.deleted', data: userAndActor(row) }],
  'email.verified': (row) => [{ type: 'user.email_verified', data: userAndActor(row) }],
  'email.changed': (row) => [{ type: 'user.email_changed', data: userAndActor(row) }],
  'auth.password_reset': (row) => [{ type: 'user.password_changed', data: { ...userAndActor(row), reset: true } }],
  'role.assigned': (row, details) => [{ type: 'user.role_assigned', data: { ...userAndActor(row), role: text(details.role) } }],
  'role.removed': (row, details) => [{ type: 'user.role_removed', data: { ...userAndActor(row), role: text(details.role) } }],
  'user.suspended': (row, details) => [{
    type: 'user.suspended',
    data: { ...userAndActor(row), until: typeof details.until === 'string' ? details.until : null }
  }],
  'user.suspension_lifted': (row) => [{ type: 'user.suspension_lifted', data: userAndActor(row) }],
  'auth.login': (row, details) => [{ type: 'session.created', data: { ...userAndActor(row), method: text(details.method) } }],
  'auth.logout': (row) => [{ type: 'session.revoked', data: userAndActor(row) }],
  'session.ended': (row) => [{ type: 'session.revoked', data: userAndActor(row) }],
  'mfa.enabled': (row, details) => [{ type: 'mfa.enabled', data: { ...userAndActor(row), method: text(details.method) } }],
  'mfa.disabled': (row, details) => [{ type: 'mfa.disabled', data: { ...userAndActor(row), method: text(details.method) } }],
  'mfa.reset': (row, details) => texts(details.methods).map((method) => ({ type: 'mfa.disabled' as const, data: { ...userAndActor(row), method } })),
  'passkey.added': (row, details) => [{ type: 'passkey.added', data: { ...userAndActor(row), passkey_id: text(details.id) } }],
  'passkey.removed': (row, details) => [{ type: 'passkey.removed', data: { ...userAndActor(row), passkey_id: text(details.id) } }],
  'identity.linked': (row, details) => [{ type: 'identity.linked', data: { ...userAndActor(row), provider: text(details.provider) } }],
  'identity.unlinked': (row, details) => [{ type: 'identity.unlinked', data: { ...userAndActor(row), provider: text(details.provider) } }],
  'organization.created': (row, details) => [{
    type: 'organization.created', data: { organization_id: text(details.organization_id), actor_id: row.actor_id, slug: text(details.slug) }
  }],
  'organization.updated': (row, details) => [{
    type: 'organization.updated', data: { organization_id: text(details.organization_id), actor_id: row.actor_id, changed: texts(details.fields) }
  }],
  'organization.deleted': (row, details) => [{ type: 'organization.deleted', data: { organization_id: text(details.organization_id), actor_id: row.actor_id } }],
  'membership.added': (row, details) => [{
    type: 'membership.added',
    data: {
      organization_id: text(details.organization_id),
      user_id: text(row.target_id),
      actor_id: row.actor_id,
      role: role(details.role)
    }
  }],
  'membership.role_changed': (row, details) => [{
    type: 'membership.role_changed',
    data: {
      organization_id: text(details.organization_id),
      user_id: text(row.target_id),
      actor_id: row.actor_id,
      role: role(details.role),
      previous_role: role(details.previous_role)
    }
  }],
  'membership.removed': (row, details) => [{
    type: 'membership.removed', data: { organization_id: text(details.organization_id), ...userAndActor(row), left: false }
  }],
  'membership.left': (row, details) => [{
    type: 'membership.removed', data: { organization_id: text(details.organization_id), ...userAndActor(row), left: true }
  }],
  'invitation.created': (row, details) => [{
    type: 'invitation.created',
    data: {
      organization_id: text(details.organization_id),
      invitation_id: text(details.invitation_id),
      actor_id: row.actor_id,
      role: role(details.role)
    }
  }],
  'invitation.revoked': (row, details) => [{
    type: 'invitation.revoked', data: { organization_id: text(details.organization_id), invitation_id: text(details.invitation_id), actor_id: row.actor_id }
  }],
  'domain.verified': (row, details) => [{ type: 'domain.verified', data: { ...domainOf(row, details), method: text(details.method) } }],
  'domain.removed': (row, details) => [{ type: 'domain.removed', data: domainOf(row, details) }],
  'sso_connection.created': (row, details) => [{ type: 'sso_connection.created', data: connectionOf(row, details) }],
  'sso_connection.updated': (row, details) => [{
    type: 'sso_connection.updated', data: { ...connectionOf(row, details), changed: texts(details.fields) }
  }],
  'sso_connection.deleted': (row, details) => [{ type: 'sso_connection.deleted', data: connectionOf(row, details) }],
  'scim_directory.created': (row, details) => [{ type: 'scim_directory.created', data: directoryOf(row, details) }],
  'scim_directory.updated': (row, details) => [{
    type: 'scim_directory.updated', data: { ...directoryOf(row, details), changed: texts(details.fields) }
  }],
  'scim_directory.token_rotated': (row, details) => [{ type: 'scim_directory.token_rotated', data: directoryOf(row, details) }],
  'scim_directory.deleted': (row, details) => [{ type: 'scim_directory.deleted', data: directoryOf(row, details) }],
  'api_key.created': (row, details) => [{ type: 'api_key.created', data: apiKeyOf(row, details) }],
  'api_key.deleted': (row, details) => [{ type: 'api_key.deleted', data: apiKeyOf(row, details) }],
  'scim.user_created': (row, details) => [{ type: 'scim.user_created', data: scimUserOf(row, details) }],
  'scim.user_updated': (row, details) => [{ type: 'scim.user_updated', data: scimUserOf(row, details) }],
  'scim.user_deactivated': (row, details) => [{ type: 'scim.user_deactivated', data: scimUserOf(row, details) }],
  'scim.user_reactivated': (row, details) => [{ type: 'scim.user_reactivated', data: scimUserOf(row, details) }],
  'scim.user_deleted': (row, details) => [{ type: 'scim.user_deleted', data: scimUserOf(row, details) }],
  'scim.group_created': (row, details) => [{ type: 'scim.group_created', data: scimGroupOf(row, details) }],
  'scim.group_updated': (row, details) => [{ type: 'scim.group_updated', data: scimGroupOf(row, details) }],
  'scim.group_deleted': (row, details) => [{ type: 'scim.group_deleted', data: scimGroupOf(row, details) }]
}

/**
 * The events an audit entry is delivered as: those of the catalogue its change stands for
 * (only for changes made: entries of refusals and failures stand for none), and the entry itself
 * as `audit.entry` when the audit log is streamed to webhooks (AUDIT_STREAM=webhooks).
 */
export function webhookEventsOf (row: AuditLogsTable, streamAudit: boolean): WebhookEvent[] {
  const events = row.outcome === 'success' ? FROM_AUDIT[row.event as AuditEvent]?.(row, JSON.parse(row.details) as Details) ?? [] : []
  return streamAudit ? [...events, { type: 'audit.entry', data: auditEntryOf(row) }] : events
}
