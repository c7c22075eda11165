import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { AuditEntrySchema } from './audit.js'
import { CollectionEnvelope, ListItem } from './collection.js'
import { DataEnvelope, IdSchema, TimestampSchema } from './common.js'
import { OrganizationRoleSchema } from './organizations.js'

const Actor = Type.Union([IdSchema, Type.Null()], {
  description: 'Who made the change (the account itself for its own sign-up or reset); null when no account did'
})
const UserId = Type.String({ description: 'The account the event is about' })
const OrganizationId = Type.String({ description: 'The organization the event is about' })
const Fields = Type.Array(Type.String(), { description: 'The names of the fields that changed, never their values' })

const scimDirectoryFields = { organization_id: OrganizationId, directory_id: Type.String(), actor_id: Actor }
/** An organization's SCIM directory, changed by an owner. */
const ScimDirectoryEvent = Type.Object(scimDirectoryFields)
/** A change a directory made (its actor is null: no account made it). */
const ScimUserEvent = Type.Object({
  ...scimDirectoryFields, user_id: UserId, scim_user_id: Type.String({ description: 'The User\'s id in the directory\'s SCIM resources' })
})
const ScimGroupEvent = Type.Object({
  ...scimDirectoryFields,
  group_id: Type.String(),
  members_added: Type.Integer({ minimum: 0 }),
  members_removed: Type.Integer({ minimum: 0 })
})

const ApiKeyEvent = Type.Object({
  api_key_id: Type.String(),
  user_id: Type.Union([UserId, Type.Null()], { description: 'The person whose key it is; null for an organization\'s' }),
  organization_id: Type.Union([OrganizationId, Type.Null()], { description: 'The organization whose key it is; null for a person\'s' }),
  actor_id: Actor
})

/**
 * The event catalogue (docs/api.md, "Webhooks"): each type's `data`. Events carry ids and
 * the names of what changed, never secrets nor the new values: a receiver reads the resource
 * for its current state.
 */
export const WEBHOOK_EVENT_DATA = {
  'user.created': Type.Object({ user_id: UserId, actor_id: Actor, provider: Type.Union([Type.String(), Type.Null()], { description: 'The sign-in provider it was created through; null for a sign-up with a password or by an administrator' }) }),
  'user.updated': Type.Object({ user_id: UserId, actor_id: Actor, changed: Fields }),
  'user.deleted': Type.Object({ user_id: UserId, actor_id: Actor }),
  'user.email_verified': Type.Object({ user_id: UserId, actor_id: Actor }),
  'user.email_changed': Type.Object({ user_id: UserId, actor_id: Actor }),
  'user.password_changed': Type.Object({ user_id: UserId, actor_id: Actor, reset: Type.Boolean({ description: 'Changed through a reset link, not by a signed-in caller' }) }),
  'user.role_assigned': Type.Object({ user_id: UserId, actor_id: Actor, role: Type.String() }),
  'user.role_removed': Type.Object({ user_id: UserId, actor_id: Actor, role: Type.String() }),
  'user.suspended': Type.Object({
    user_id: UserId, actor_id: Actor, until: Type.Union([TimestampSchema, Type.Null()], { description: 'When it ends by itself; null: when lifted' })
  }),
  'user.suspension_lifted': Type.Object({ user_id: UserId, actor_id: Actor }),
  'session.created': Type.Object({ user_id: UserId, actor_id: Actor, method: Type.String({ description: 'How the sign-in was proved: password, passkey, mfa:totp, …' }) }),
  'session.revoked': Type.Object({ user_id: UserId, actor_id: Actor }),
  'mfa.enabled': Type.Object({ user_id: UserId, actor_id: Actor, method: Type.String() }),
  'mfa.disabled': Type.Object({ user_id: UserId, actor_id: Actor, method: Type.String() }),
  'passkey.added': Type.Object({ user_id: UserId, actor_id: Actor, passkey_id: Type.String() }),
  'passkey.removed': Type.Object({ user_id: UserId, actor_id: Actor, passkey_id: Type.String() }),
  'identity.linked': Type.Object({ user_id: UserId, actor_id: Actor, provider: Type.String() }),
  'identity.unlinked': Type.Object({ user_id: UserId, actor_id: Actor, provider: Type.String() }),
  'organization.created': Type.Object({ organization_id: OrganizationId, actor_id: Actor, slug: Type.String() }),
  'organization.updated': Type.Object({ organization_id: OrganizationId, actor_id: Actor, changed: Fields }),
  'organization.deleted': Type.Object({ organization_id: OrganizationId, actor_id: Actor }),
  'membership.added': Type.Object({ organization_id: OrganizationId, user_id: UserId, actor_id: Actor, role: OrganizationRoleSchema }),
  'membership.role_changed': Type.Object({
    organization_id: OrganizationId,
    user_id: UserId,
    actor_id: Actor,
    role: OrganizationRoleSchema,
    previous_role: OrganizationRoleSchema
  }),
  'membership.removed': Type.Object({
    organization_id: OrganizationId, user_id: UserId, actor_id: Actor, left: Type.Boolean({ description: 'The member left, rather than being removed' })
  }),
  'invitation.created': Type.Object({ organization_id: OrganizationId, invitation_id: Type.String(), actor_id: Actor, role: OrganizationRoleSchema }),
  'invitation.revoked': Type.Object({ organization_id: OrganizationId, invitation_id: Type.String(), actor_id: Actor }),
  'domain.verified': Type.Object({
    organization_id: OrganizationId,
    domain_id: Type.String(),
    domain: Type.String(),
    actor_id: Actor,
    method: Type.String({ description: '`dns` or `operator`' })
  }),
  'domain.removed': Type.Object({ organization_id: OrganizationId, domain_id: Type.String(), domain: Type.String(), actor_id: Actor }),
  'sso_connection.created': Type.Object({ organization_id: OrganizationId, connection_id: Type.String(), actor_id: Actor }),
  'sso_connection.updated': Type.Object({ organization_id: OrganizationId, connection_id: Type.String(), actor_id: Actor, changed: Fields }),
  'sso_connection.deleted': Type.Object({ organization_id: OrganizationId, connection_id: Type.String(), actor_id: Actor }),
  'scim_directory.created': ScimDirectoryEvent,
  'scim_directory.updated': Type.Object({ ...scimDirectoryFields, changed: Fields }),
  'scim_directory.token_rotated': ScimDirectoryEvent,
  'scim_directory.deleted': ScimDirectoryEvent,
  'api_key.created': ApiKeyEvent,
  'api_key.deleted': ApiKeyEvent,
  'scim.user_created': ScimUserEvent,
  'scim.user_updated': ScimUserEvent,
  'scim.user_deactivated': ScimUserEvent,
  'scim.user_reactivated': ScimUserEvent,
  'scim.user_deleted': ScimUserEvent,
  'scim.group_created': ScimGroupEvent,
  'scim.group_updated': ScimGroupEvent,
  'scim.group_deleted': ScimGroupEvent,
  'webhook.test': Type.Object({ webhook_id: Type.String({ description: 'The endpoint that was sent a test' }) }),
  'audit.entry': AuditEntrySchema
} as const satisfies Record<string, TSchema>

export type WebhookEventType = keyof typeof WEBHOOK_EVENT_DATA
export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENT_DATA) as WebhookEventType[]
export type WebhookEventData<T extends WebhookEventType> = Static<typeof WEBHOOK_EVENT_DATA[T]>

/** What one delivery's body is (the Standard Webhooks payload shape): the type, when it happened, and its data. */
export function WebhookPayloadSchema<T extends WebhookEventType> (type: T) {
  return Type.Object({
    type: Type.Literal(type),
    timestamp: TimestampSchema,
    data: WEBHOOK_EVENT_DATA[type]
  }, { title: `WebhookEvent_${type.replace('.', '_')}` })
}

const EventTypeSchema = Type.Unsafe<WebhookEventType>(Type.String({ enum: [...WEBHOOK_EVENT_TYPES], title: 'WebhookEventType' }))

/** https, or http to loopback when the operator allows it (docs/security.md, "Webhooks"). */
const UrlSchema = Type.String({ minLength: 1, maxLength: 2048, format: 'uri', examples: ['https://hooks.example.com/users-api'] })
const DescriptionSchema = Type.String({ maxLength: 500, pattern: '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$' })
const EventTypesSchema = Type.Array(EventTypeSchema, {
  minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length, uniqueItems: true
})

export const WebhookSchema = Type.Object({
  id: IdSchema,
  url: Type.String(),
  description: Type.String(),
  events: Type.Array(EventTypeSchema, { description: 'The event types delivered to the endpoint' }),
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.Literal('manual'), Type.Literal('failing'), Type.Null()], {
    description: '`failing`: disabled by the service after a delivery was given up with no success since; null while enabled'
  }),
  previous_secret_expires_at: Type.Union([TimestampSchema, Type.Null()], {
    description: 'After a rotation, deliveries are also signed with the previous secret until then'
  }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'Webhook' })
export type Webhook = Static<typeof WebhookSchema>

/** The endpoint with its signing secret: only in the answers that create it or rotate it. */
export const WebhookWithSecretSchema = Type.Composite([WebhookSchema, Type.Object({
  secret: Type.String({ pattern: '^whsec_', description: 'The signing secret (Standard Webhooks), shown this once' })
})], { title: 'WebhookWithSecret' })

export const WebhookCreateSchema = Type.Object({
  url: UrlSchema,
  events: EventTypesSchema,
  description: Type.Optional(DescriptionSchema),
  enabled: Type.Optional(Type.Boolean({ default: true }))
}, { additionalProperties: false })
export type WebhookCreate = Static<typeof WebhookCreateSchema>

export const WebhookUpdateSchema = Type.Object({
  url: Type.Optional(UrlSchema),
  events: Type.Optional(EventTypesSchema),
  description: Type.Optional(DescriptionSchema),
  enabled: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export type WebhookUpdate = Static<typeof WebhookUpdateSchema>

export const WEBHOOK_FIELDS = {
  sortable: ['url', 'created_at'],
  selectable: ['url', 'description', 'events', 'enabled', 'disabled_reason', 'previous_secret_expires_at', 'created_at', 'updated_at'],
  searchIn: null
} as const

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const
export type DeliveryStatus = typeof DELIVERY_STATUSES[number]

export const WebhookDeliverySchema = Type.Object({
  id: IdSchema,
  event_type: EventTypeSchema,
  status: Type.Unsafe<DeliveryStatus>(Type.String({ enum: [...DELIVERY_STATUSES], description: '`pending` until a 2xx answer (`succeeded`) or the last try (`failed`)' })),
  attempts: Type.Integer({ minimum: 0 }),
  last_status: Type.Union([Type.Integer(), Type.Null()], { description: 'The HTTP status of the last try; null before one or when no answer came' }),
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'Why the last try failed' }),
  next_attempt_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When it is tried next; null once settled, or while its endpoint is disabled' }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema
}, { title: 'WebhookDelivery' })
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>

export const DELIVERY_FIELDS = {
  sortable: ['created_at'],
  selectable: ['event_type', 'status', 'attempts', 'last_status', 'last_error', 'next_attempt_at', 'created_at', 'updated_at'],
  searchIn: null
} as const

export const DeliveryParamsSchema = Type.Object({ id: IdSchema, deliveryId: IdSchema }, { additionalProperties: false })

export const WebhookResponseSchema = DataEnvelope(WebhookSchema)
export const WebhookWithSecretResponseSchema = DataEnvelope(WebhookWithSecretSchema)
export const WebhookCollectionSchema = CollectionEnvelope(ListItem(WebhookSchema, 'WebhookListItem'))
export const WebhookDeliveryResponseSchema = DataEnvelope(WebhookDeliverySchema)
export const WebhookDeliveryCollectionSchema = CollectionEnvelope(ListItem(WebhookDeliverySchema, 'WebhookDeliveryListItem'))
