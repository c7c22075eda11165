import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ReauthenticateBodySchema, ReauthenticationCodeBodySchema, ReauthenticationResponseSchema } from '../../../schemas/reauthentication.js'
import { AcceptedResponseSchema } from '../../../schemas/recovery.js'

/** The step-up before sensitive changes (docs/api.md, "Step-up"). */
const reauthentication: FastifyPluginAsyncTypebox = async (fastify) => {
  const { reauthentication } = fastify.services

  fastify.post('', {
    // The first enrolment of a required second factor may follow a step-up too.
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.reauthenticate',
      summary: 'Step up: one proof (password, TOTP or backup code, a code sent by message, or a passkey) lets this session make sensitive changes for 5 minutes',
      body: ReauthenticateBodySchema,
      response: { 200: described(ReauthenticationResponseSchema, 'The session may make sensitive changes until reauthenticated_until'), ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request) => ({ data: await reauthentication.reauthenticate(request.serviceContext, request.body) }))

  fastify.post('/code', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.reauthenticate.code',
      summary: 'Send a code for a step-up by e-mail or SMS (a factor that is on, or the verified address of an account without a password or second factor)',
      body: ReauthenticationCodeBodySchema,
      response: { 202: described(AcceptedResponseSchema, 'A code is on its way'), ...errorResponses({ body: true }, 401, 409) }
    }
  }, async (request, reply) => {
    await reauthentication.sendCode(request.serviceContext, request.body.method)
    return await reply.code(202).send({ data: { message: 'A code is on its way.' } })
  })
}

export default reauthentication
