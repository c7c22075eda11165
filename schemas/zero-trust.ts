import { type Static, Type } from '@sinclair/typebox'
import { IdSchema, DataEnvelope } from './common.js'

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

/** Named response envelopes (components of the OpenAPI document). */
export const AccessDecisionResponseSchema = DataEnvelope(AccessDecisionSchema)
