import { type Static, Type } from '@sinclair/typebox'
import { ListItem, CollectionEnvelope } from './collection.js'
import { IdSchema, TimestampSchema, DataEnvelope } from './common.js'

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
export const DeviceResponseSchema = DataEnvelope(DeviceSchema)
