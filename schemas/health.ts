import { Type } from '@sinclair/typebox'

export const HealthSchema = Type.Object({ status: Type.Literal('ok') })

const CheckSchema = Type.Union([Type.Literal('ok'), Type.Literal('not_configured')])

export const ReadinessSchema = Type.Object({
  status: Type.Literal('ok'),
  checks: Type.Object({ database: CheckSchema, redis: CheckSchema })
})
