import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BEARER } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { AcceptedResponseSchema, ForgotPasswordBodySchema, ResetPasswordBodySchema, TokenBodySchema } from '../../../schemas/recovery.js'
import { UserResponseSchema } from '../../../schemas/user.js'

/** What every forgotten-password request is answered, whatever the address. */
const RESET_ACCEPTED = { data: { message: 'If an account has this address, a message with a reset link is on its way.' } }

/** E-mail verification and password recovery (docs/api.md, "E-mail verification and recovery"). */
const recovery: FastifyPluginAsyncTypebox = async (fastify) => {
  const { emailVerification, passwordReset } = fastify.services

  fastify.post('/email/verification', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      summary: 'Send a new verification message to the caller\'s address (nothing is sent when it is verified already)',
      security: BEARER,
      response: { 202: AcceptedResponseSchema, ...errorResponses({ body: true }, 401) }
    }
  }, async (request, reply) => {
    const sent = await emailVerification.resend(request.serviceContext, fastify.authorize(request, 'read'))
    return await reply.code(202).send({ data: { message: sent ? 'A verification message is on its way.' : 'No message sent: the address is verified, or enough messages were sent this hour.' } })
  })

  fastify.post('/email/verify', {
    schema: {
      tags: ['auth'],
      summary: 'Verify an address with the token its message carried',
      body: TokenBodySchema,
      response: { 200: UserResponseSchema, ...errorResponses({ body: true }) }
    }
  }, async (request) => ({ data: await emailVerification.verify(request.serviceContext, request.body.token) }))

  fastify.post('/password/forgot', {
    schema: {
      tags: ['auth'],
      summary: 'Ask for a password reset link by e-mail (the same answer whether or not the address has an account)',
      body: ForgotPasswordBodySchema,
      response: { 202: AcceptedResponseSchema, ...errorResponses({ body: true }) }
    }
  }, async (request, reply) => {
    passwordReset.requestReset(request.serviceContext, request.body)
    return await reply.code(202).send(RESET_ACCEPTED)
  })

  fastify.post('/password/reset', {
    schema: {
      tags: ['auth'],
      summary: 'Choose a new password with the token of a reset message; every session of the account ends',
      body: ResetPasswordBodySchema,
      response: { 204: { type: 'null', description: 'Password reset' }, ...errorResponses({ body: true }) }
    }
  }, async (request, reply) => {
    await passwordReset.reset(request.serviceContext, request.body)
    return await reply.code(204).send()
  })
}

export default recovery
