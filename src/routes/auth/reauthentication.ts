import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { BEARER, described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ReauthenticateBodySchema, ReauthenticationCodeBodySchema, ReauthenticationResponseSchema } from '../../../schemas/reauthentication.js'
import { AcceptedResponseSchema } from '../../../schemas/recovery.js'

/** The step-up before sensitive changes (docs/api.md, "Step-up"). */
const reauthentication: FastifyPluginAsyncTypebox = async (fastify) => {
  const { reauthentication } = fastify.services

  fastify.post('', {
    onRequest: [fastify.authenticate],
    // The first enrolment of a required second factor may follow a step-up too.
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.reauthenticate',
      summary: 'Step up: one proof (password, TOTP or backup code, a code sent by message, or a passkey) lets this session make sensitive changes for 5 minutes',
      security: BEARER,
      body: ReauthenticateBodySchema,
      response: { 200: described(ReauthenticationResponseSchema, 'The session may make sensitive changes until reauthenticated_until'), ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request) => ({ data: await reauthentication.reauthenticate(request.serviceContext, fastify.authorize(request, 'read'), request.body) }))

  fastify.post('/code', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.reauthenticate.code',
      summary: 'Send a code for a step-up by e-mail or SMS (a factor that is on, or the verified address of an account without a password or second factor)',
      security: BEARER,
      body: ReauthenticationCodeBodySchema,
      response: { 202: described(AcceptedResponseSchema, 'A code is on its way'), ...errorResponses({ body: true }, 401, 409) }
    }
  }, async (request, reply) => {
    await reauthentication.sendCode(request.serviceContext, fastify.authorize(request, 'read'), request.body.method)
    return await reply.code(202).send({ data: { message: 'A code is on its way.' } })
  })
}

export default reauthentication
