import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBodySchema, LogoutBodySchema, RefreshBodySchema, SESSION_FIELDS, SessionCollectionSchema, TokenPairResponseSchema } from '../../../schemas/auth.js'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { BEARER, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import { MeResponseSchema } from '../../../schemas/user.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { parseCollectionQuery } from '../../collection/query.js'
import { Errors } from '../../errors.js'
import { effectiveRoles, permissionsOf } from '../../security/permissions.js'
import mfa from './mfa.js'
import oauth from './oauth.js'
import { checkSecret, completeSignIn } from './sign-in.js'

/** CONTRACT section 3: sign-in, sessions and the caller's own account. */
const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { repositories, passwords, sessions } = fastify
  await fastify.register(mfa, { prefix: '/mfa' })
  await fastify.register(oauth, { prefix: '/oauth' })

  fastify.post('/login', {
    schema: {
      tags: ['auth'],
      summary: 'Sign in with e-mail and password (answers an MFA challenge when the account has MFA on)',
      body: LoginBodySchema,
      response: { 200: SignInResultResponseSchema, ...errorResponses({ body: true }, 401, 423) }
    }
  }, async (request) => {
    const { email, password, device } = request.body
    const account = await repositories.users.findByEmail(email)
    // Unknown e-mail, password-less account and wrong password cost the same hash and answer alike.
    if (account === undefined) {
      await passwords.verifyAgainstDummy(password)
      request.audit('auth.login_failed', { outcome: 'failure', actorId: null, targetId: null, details: { email, reason: 'unknown_email' } })
      throw new Errors.INVALID_CREDENTIALS()
    }
    const stored = account.password_hash
    const valid = await checkSecret(fastify, request, account.id, 'auth.login_failed', { email, reason: 'wrong_password' }, async () =>
      stored !== null ? await passwords.verify(password, stored) : await passwords.verifyAgainstDummy(password))
    if (!valid) throw new Errors.INVALID_CREDENTIALS()
    const principal = await repositories.users.findPrincipal(account.id)
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    return { data: await completeSignIn(fastify, request, principal, device, 'password') }
  })

  fastify.post('/refresh', {
    schema: {
      tags: ['auth'],
      summary: 'Exchange a refresh token for a new pair (the presented token is spent)',
      body: RefreshBodySchema,
      response: { 200: TokenPairResponseSchema, ...errorResponses({ body: true }, 401) }
    }
  }, async (request, reply) => {
    try {
      const { pair, userId } = await sessions.refresh(request.body.refresh_token, Date.now() - reply.elapsedTime)
      request.audit('auth.refresh', { outcome: 'success', actorId: userId, targetId: userId })
      return { data: pair }
    } catch (error) {
      if (error instanceof Errors.TOKEN_REUSED) request.audit('auth.token_reused', { outcome: 'failure', details: {} })
      throw error
    }
  })

  fastify.post('/logout', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      summary: 'Revoke the access token and end its session',
      security: BEARER,
      body: LogoutBodySchema,
      response: { 204: { type: 'null', description: 'Signed out' }, ...errorResponses({ body: true }, 401) }
    }
  }, async (request, reply) => {
    const caller = fastify.authorize(request, 'read')
    await sessions.logout(caller, request.body?.refresh_token)
    request.audit('auth.logout', { outcome: 'success', targetId: caller.id })
    return await reply.code(204).send()
  })

  fastify.get('/me', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      summary: 'The signed-in user with roles, permissions and MFA state',
      security: BEARER,
      response: { 200: MeResponseSchema, ...errorResponses({}, 401) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    const user = await repositories.users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return {
      data: {
        ...user,
        roles: [...effectiveRoles(caller.roles)],
        permissions: permissionsOf(caller.roles),
        mfa_enabled: caller.mfaEnabled
      }
    }
  })

  fastify.get('/sessions', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['auth'],
      summary: 'The caller\'s live sessions',
      security: BEARER,
      querystring: CollectionQuerySchema(SESSION_FIELDS),
      response: { 200: SessionCollectionSchema, ...errorResponses({}, 401) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    const collection = parseCollectionQuery(request.query, {
      ...SESSION_FIELDS,
      defaultSort: [{ field: 'created_at', descending: false }]
    }, fastify.cursors)
    return collectionEnvelope(await repositories.sessions.list(caller.id, sessions.cutoffs(), collection), collection.fields)
  })

  fastify.delete('/sessions/:id', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['auth'],
      summary: 'End one of the caller\'s sessions: its refresh tokens stop working',
      security: BEARER,
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Ended' }, ...errorResponses({ body: true }, 401, 404) }
    }
  }, async (request, reply) => {
    const caller = fastify.authorize(request, 'read')
    if (!await sessions.end(caller.id, request.params.id)) throw new Errors.NOT_FOUND('Session')
    return await reply.code(204).send()
  })
}

export default auth
