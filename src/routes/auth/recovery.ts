import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { AcceptedResponseSchema, ForgotPasswordBodySchema, ResetPasswordBodySchema, TokenBodySchema } from '../../../schemas/recovery.js'
import { UserResponseSchema } from '../../../schemas/user.js'

/** What every forgotten-password request is answered, whatever the address. */
const RESET_ACCEPTED = { data: { message: 'If an account has this address, a message with a reset link is on its way.' } }

/** E-mail verification and password recovery (docs/api.md, "E-mail verification and recovery"). */
const recovery: FastifyPluginAsyncTypebox = async (fastify) => {
  const { emailVerification, passwordReset } = fastify.services

  fastify.post('/email/verification', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.email.sendVerification',
      summary: 'Send a new verification message to the caller\'s address (nothing is sent when it is verified already)',
      response: { 202: described(AcceptedResponseSchema, 'Taken in: a message is on its way unless the address is verified already'), ...errorResponses({ body: true }, 401) }
    }
  }, async (request, reply) => {
    const sent = await emailVerification.resend(request.serviceContext)
    return await reply.code(202).send({ data: { message: sent ? 'A verification message is on its way.' : 'No message sent: the address is verified, or enough messages were sent this hour.' } })
  })

  fastify.post('/email/verify', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.email.verify',
      summary: 'Verify an address with the token its message carried',
      body: TokenBodySchema,
      response: { 200: described(UserResponseSchema, 'The address is verified: the user'), ...errorResponses({ body: true }) }
    }
  }, async (request) => ({ data: await emailVerification.verify(request.serviceContext, request.body.token) }))

  fastify.post('/password/forgot', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.password.forgot',
      summary: 'Ask for a password reset link by e-mail (the same answer whether or not the address has an account)',
      body: ForgotPasswordBodySchema,
      response: { 202: described(AcceptedResponseSchema, 'Taken in: a reset link is on its way when the address has an account'), ...errorResponses({ body: true }) }
    }
  }, async (request, reply) => {
    await passwordReset.requestReset(request.serviceContext, request.body)
    return await reply.code(202).send(RESET_ACCEPTED)
  })

  fastify.post('/password/reset', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.password.reset',
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
