import { type Static, Type } from '@sinclair/typebox'
import { DataEnvelope } from './common.js'
import { EmailSchema, PasswordSchema } from './user.js'

/** A verification or reset token as the message carried it (any other text is simply a wrong token). */
export const OneTimeTokenSchema = Type.String({ minLength: 1, maxLength: 256, description: 'The token from the message (or its link\'s `token` parameter)' })

export const TokenBodySchema = Type.Object({ token: OneTimeTokenSchema }, { additionalProperties: false })
export type TokenBody = Static<typeof TokenBodySchema>

export const ForgotPasswordBodySchema = Type.Object({ email: EmailSchema }, { additionalProperties: false })
export type ForgotPasswordBody = Static<typeof ForgotPasswordBodySchema>

export const ResetPasswordBodySchema = Type.Object({ token: OneTimeTokenSchema, password: PasswordSchema }, {
  additionalProperties: false
})
export type ResetPasswordBody = Static<typeof ResetPasswordBodySchema>

/** A request taken in: what follows happens by message. */
export const AcceptedSchema = Type.Object({
  message: Type.String({ description: 'What happens next, in words' })
}, { title: 'Accepted' })

export const AcceptedResponseSchema = DataEnvelope(AcceptedSchema)
