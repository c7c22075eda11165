import { Type, type Static } from '@sinclair/typebox'
import { EmailSchema } from './user.js'

export const DeviceSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 }))
}, { additionalProperties: false, title: 'Device' })
export type Device = Static<typeof DeviceSchema>

export const LoginBodySchema = Type.Object({
  email: EmailSchema,
  password: Type.String({ minLength: 1, maxLength: 128 }),
  device: Type.Optional(DeviceSchema)
}, { additionalProperties: false })
export type LoginBody = Static<typeof LoginBodySchema>

/** CONTRACT section 3: the body of every successful sign-in. */
export const TokenPairSchema = Type.Object({
  access_token: Type.String(),
  refresh_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ description: 'Access token lifetime in seconds' }),
  refresh_expires_in: Type.Integer({ description: 'Refresh token lifetime in seconds' })
}, { title: 'TokenPair' })
export type TokenPair = Static<typeof TokenPairSchema>
