import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LoginBodySchema, LogoutBodySchema, RefreshBodySchema, SESSION_FIELDS, SessionCollectionSchema, TokenPairResponseSchema } from '../../../schemas/auth.js'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import { OrganizationSelectionSchema } from '../../../schemas/organizations.js'
import { MeResponseSchema } from '../../../schemas/user.js'
import emailSignIn from './email-sign-in.js'
import grants from './grants.js'
import identities from './identities.js'
import mfa from './mfa.js'
import oauth from './oauth.js'
import passkeys from './passkeys.js'
import reauthentication from './reauthentication.js'
import recovery from './recovery.js'
import ssoDiscovery from './sso.js'

/** Sign-in, sessions and the caller's own account (docs/api.md, "Sign-in and sessions"). */
const auth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { signIn, sessions, accounts } = fastify.services
  await fastify.register(mfa, { prefix: '/mfa' })
  await fastify.register(oauth, { prefix: '/oauth' })
  await fastify.register(passkeys, { prefix: '/passkeys' })
  await fastify.register(identities, { prefix: '/identities' })
  await fastify.register(grants)
  await fastify.register(reauthentication, { prefix: '/reauthenticate' })
  await fastify.register(recovery)
  await fastify.register(ssoDiscovery)
  await fastify.register(emailSignIn)

  fastify.post('/login', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.login',
      summary: 'Sign in with e-mail and password (answers an MFA challenge when the account has MFA on)',
      body: LoginBodySchema,
      response: { 200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the account has MFA on (`mfa_required`)'), ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request) => ({ data: await signIn.withPassword(request.serviceContext, request.body) }))

  fastify.post('/refresh', {
    config: { access: 'public' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.refresh',
      summary: 'Exchange a refresh token for a new pair (the presented token is spent; a retry within REFRESH_RETRY_WINDOW_S gets the same pair)',
      body: RefreshBodySchema,
      response: { 200: described(TokenPairResponseSchema, 'A new token pair'), ...errorResponses({ body: true }, 401) }
    }
  }, async (request) => ({ data: await signIn.refresh(request.serviceContext, request.body.refresh_token) }))

  fastify.post('/organization', {
    config: { access: 'public' },
    schema: {
      tags: ['auth', 'organizations'],
      operationId: 'auth.organization',
      summary: 'Select the organization the session\'s tokens speak for (`org_id`, `org_roles`), or none: a refresh that also selects',
      body: OrganizationSelectionSchema,
      response: {
        200: described(TokenPairResponseSchema, 'A new token pair for the organization'),
        ...errorResponses({ body: true }, 401, 404)
      }
    }
  }, async (request) => ({
    data: await signIn.refresh(request.serviceContext, request.body.refresh_token, {
      organizationId: request.body.organization_id
    })
  }))

  fastify.post('/logout', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.logout',
      summary: 'Revoke the access token and end its session',
      body: LogoutBodySchema,
      response: { 204: { type: 'null', description: 'Signed out' }, ...errorResponses({ body: true }, 401) }
    }
  }, async (request, reply) => {
    await signIn.signOut(request.serviceContext, request.body?.refresh_token)
    return await reply.code(204).send()
  })

  fastify.get('/me', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['auth'],
      operationId: 'auth.me',
      summary: 'The signed-in user with roles, permissions and MFA state',
      response: { 200: described(MeResponseSchema, 'The caller'), ...errorResponses({}, 401) }
    }
  }, async (request) => ({ data: await accounts.describe(request.serviceContext) }))

  fastify.get('/sessions', {
    config: { access: 'bearer' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.sessions.list',
      summary: 'The caller\'s live sessions',
      querystring: CollectionQuerySchema(SESSION_FIELDS),
      response: { 200: described(SessionCollectionSchema, 'A page of the caller\'s live sessions'), ...errorResponses({}, 401) }
    }
  }, async (request) => await sessions.list(request.serviceContext, request.query))

  fastify.delete('/sessions/:id', {
    config: { access: 'bearer' },
    schema: {
      tags: ['auth'],
      operationId: 'auth.sessions.delete',
      summary: 'End one of the caller\'s sessions: its refresh tokens stop working',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Ended' }, ...errorResponses({ body: true }, 401, 404) }
    }
  }, async (request, reply) => {
    await sessions.end(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default auth
