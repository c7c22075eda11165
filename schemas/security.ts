import { type Static, Type } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { IdSchema, TimestampSchema, DataEnvelope } from './common.js'

/** The input of `POST /api/v1/security/access-check` (docs/api.md, "Zero-trust access check"). */
export const AccessCheckBodySchema = Type.Object({
  device_id: Type.Optional(Type.String({ maxLength: 128 })),
  user_agent: Type.Optional(Type.String({ maxLength: 512 })),
  client_ip: Type.Optional(Type.String({ maxLength: 64 })),
  user_id: Type.Optional(IdSchema),
  location: Type.Optional(Type.String({ maxLength: 200 })),
  timestamp: Type.Optional(Type.String({ format: 'date-time', description: 'Defaults to now; its UTC hour is what counts' }))
}, { additionalProperties: false })
export type AccessCheckBody = Static<typeof AccessCheckBodySchema>

const RiskFactorSchema = Type.Object({ trusted: Type.Boolean(), risk: Type.Integer(), reason: Type.String() })
export type RiskFactor = Static<typeof RiskFactorSchema>

export const AccessDecisionSchema = Type.Object({
  allowed: Type.Boolean(),
  risk_score: Type.Integer(),
  factors: Type.Array(RiskFactorSchema, { minItems: 4, maxItems: 4, description: 'device, network, behaviour, timing' })
}, { title: 'AccessDecision' })

/** A trusted device (docs/api.md, "Trusted devices"). */
export const DeviceSchema = Type.Object({
  id: IdSchema,
  device_id: Type.String(),
  name: Type.String(),
  created_at: TimestampSchema
}, { title: 'TrustedDevice' })

export const DeviceBodySchema = Type.Object({
  device_id: Type.String({ minLength: 1, maxLength: 128, examples: ['laptop-7f3a'] }),
  name: Type.String({ minLength: 1, maxLength: 100, examples: ['Work laptop'] })
}, { additionalProperties: false })
export type DeviceBody = Static<typeof DeviceBodySchema>

export const DEVICE_FIELDS = {
  sortable: ['device_id', 'name', 'created_at'],
  selectable: ['device_id', 'name', 'created_at'],
  searchIn: 'the name'
} as const

export const DeviceListItemSchema = ListItem(DeviceSchema, 'TrustedDeviceListItem')

export const DeviceParamsSchema = Type.Object({
  id: IdSchema,
  deviceId: Type.String({ minLength: 1, maxLength: 128, examples: ['laptop-7f3a'], description: 'The record id or the device_id' })
}, { additionalProperties: false })

/** Named response envelopes (components of the OpenAPI document). */
export const DeviceCollectionSchema = CollectionEnvelope(DeviceListItemSchema)
export const AccessDecisionResponseSchema = DataEnvelope(AccessDecisionSchema)
export const DeviceResponseSchema = DataEnvelope(DeviceSchema)
