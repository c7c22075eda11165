import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { SignInMethodsResponseSchema, UserSessionParamsSchema } from '../../../schemas/account-support.js'
import { SESSION_FIELDS, SessionCollectionSchema } from '../../../schemas/auth.js'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'

/** An operator's help with a user's sign-in: their sessions and second factors (docs/api.md, "Account support"). */
const support: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accountSupport } = fastify.services

  fastify.get('/:id/sessions', {
    config: { access: { permission: 'manage_users', self: 'read' } },
    schema: {
      tags: ['users'],
      operationId: 'users.sessions.list',
      summary: 'A user\'s live sessions',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(SESSION_FIELDS),
      response: { 200: described(SessionCollectionSchema, 'A page of the user\'s live sessions'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await accountSupport.sessionsOf(request.serviceContext, request.params.id, request.query))

  fastify.delete('/:id/sessions/:sessionId', {
    config: { access: { permission: 'manage_users', self: 'delete' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.sessions.delete',
      summary: 'End one of a user\'s sessions: its refresh tokens stop working and its access tokens are revoked',
      params: UserSessionParamsSchema,
      response: { 204: { type: 'null', description: 'Ended' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await accountSupport.endSession(request.serviceContext, request.params.id, request.params.sessionId)
    return await reply.code(204).send()
  })

  fastify.get('/:id/sign-in-methods', {
    config: { access: { permission: 'manage_users', self: 'read' } },
    schema: {
      tags: ['users'],
      operationId: 'users.signInMethods.get',
      summary: 'How a user signs in: password, second factors, passkeys, providers (never a secret)',
      params: IdParamsSchema,
      response: { 200: described(SignInMethodsResponseSchema, 'The user\'s sign-in methods'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await accountSupport.signInMethodsOf(request.serviceContext, request.params.id) }))

  fastify.delete('/:id/mfa', {
    config: { access: { permission: 'manage_users' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.mfa.delete',
      summary: 'Reset another user\'s second factors (TOTP, backup codes, codes by message), with the operator\'s proof; passkeys and sessions stay',
      params: IdParamsSchema,
      body: ProofBodySchema,
      response: { 204: { type: 'null', description: 'Reset (or there was none)' }, ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request, reply) => {
    await accountSupport.resetMfa(request.serviceContext, request.params.id, request.body ?? {})
    return await reply.code(204).send()
  })
}

export default support
