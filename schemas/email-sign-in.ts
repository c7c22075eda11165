import { type Static, Type } from '@sinclair/typebox'
import { OneTimeTokenSchema } from './recovery.js'
import { EmailSchema } from './user.js'

export const EmailSignInRequestBodySchema = Type.Object({
  email: EmailSchema,
  redirect_to: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2048,
    format: 'uri',
    examples: ['https://app.example.com/email-sign-in'],
    description: 'Where the link, once confirmed, sends the browser with a one-time `token` (one of OAUTH_REDIRECT_URLS or a path below one); default: APP_URL/email-sign-in'
  }))
}, { additionalProperties: false, examples: [{ email: 'ada@example.com' }] })
export type EmailSignInRequestBody = Static<typeof EmailSignInRequestBodySchema>

/** The code the message carried with its address, or the token a confirmed link handed the application. */
export const EmailSignInVerifyBodySchema = Type.Object({
  email: Type.Optional(EmailSchema),
  code: Type.Optional(Type.String({ pattern: '^[0-9]{6}$', description: 'The six digits of the message, with `email`' })),
  token: Type.Optional(OneTimeTokenSchema)
}, { additionalProperties: false, examples: [{ email: 'ada@example.com', code: '123456' }] })
export type EmailSignInVerifyBody = Static<typeof EmailSignInVerifyBodySchema>

/** The link's token, as the message carried it. */
const LinkTokenSchema = Type.String({
  minLength: 1, maxLength: 256, examples: ['r9oQ0eSBQj9yUeRZ3bQ0kS0Vf2yJd3m2s2mYH1Yp4xA'], description: 'The `token` of the message\'s link'
})

/** The confirmation page's form, and the link that opens it. */
export const EmailSignInConfirmBodySchema = Type.Object({ token: LinkTokenSchema }, { additionalProperties: true })
export const EmailSignInConfirmQuerySchema = Type.Object({ token: LinkTokenSchema }, { additionalProperties: true })
