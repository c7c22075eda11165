import { type Static, Type } from '@sinclair/typebox'
import { CodeSchema, DataEnvelope, EXAMPLE_PASSWORD, TimestampSchema } from './common.js'
import { MessageFactorSchema } from './mfa.js'
import { CurrentPasswordSchema, proofFields } from './proof.js'
import { PasskeyAuthenticationBodySchema } from './passkeys.js'

/** A body that carries nothing but a proof (or nothing, after a step-up). */
export const ProofBodySchema = Type.Union([Type.Object(proofFields, { additionalProperties: false }), Type.Null()])
export type ProofBody = Static<typeof ProofBodySchema>

/** One proof, turned into a step-up of the session (docs/api.md, "Step-up"). */
export const ReauthenticateBodySchema = Type.Object({
  password: Type.Optional({ ...CurrentPasswordSchema, minLength: 1, description: 'The current password (not enough for an account with a second factor)' }),
  code: Type.Optional({ ...CodeSchema, description: 'A TOTP or backup code, or a code sent by POST /auth/reauthenticate/code' }),
  passkey: Type.Optional(PasskeyAuthenticationBodySchema)
}, { additionalProperties: false, description: 'Exactly one proof', examples: [{ password: EXAMPLE_PASSWORD }] })
export type ReauthenticateBody = Static<typeof ReauthenticateBodySchema>

export const ReauthenticationCodeBodySchema = Type.Object({ method: MessageFactorSchema }, {
  additionalProperties: false
})

export const ReauthenticationSchema = Type.Object({
  reauthenticated_until: { ...TimestampSchema, description: 'Until when the session may make sensitive changes without another proof' },
  expires_in: Type.Integer({ minimum: 1, description: 'Seconds until then (300)' })
}, { title: 'Reauthentication' })
export type Reauthentication = Static<typeof ReauthenticationSchema>

export const ReauthenticationResponseSchema = DataEnvelope(ReauthenticationSchema)
