import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema } from './common.js'

/**
 * How an account signs in, as an operator sees it (docs/api.md, "Account support"): which
 * methods it has, never a secret, a code or a credential's id.
 */
export const SignInMethodsSchema = Type.Object({
  first_factors: Type.Array(Type.Union([Type.Literal('password'), Type.Literal('passkey'), Type.Literal('provider')]), {
    description: 'How it proves who it is: a password is set, a passkey registered, a provider\'s identity linked'
  }),
  second_factors: Type.Array(Type.Union([Type.Literal('totp'), Type.Literal('email'), Type.Literal('sms')]), {
    description: 'The second factors that are on: TOTP, codes by e-mail, codes by SMS'
  }),
  backup_codes_left: Type.Integer({ minimum: 0, description: 'Backup codes not yet spent' }),
  identity_providers: Type.Array(Type.String(), { description: 'The providers of its linked identities' })
}, { title: 'SignInMethods' })
export type SignInMethods = Static<typeof SignInMethodsSchema>

export const SignInMethodsResponseSchema = DataEnvelope(SignInMethodsSchema)

export const UserSessionParamsSchema = Type.Object({
  id: IdSchema,
  sessionId: IdSchema
}, { additionalProperties: false })
export type UserSessionParams = Static<typeof UserSessionParamsSchema>
