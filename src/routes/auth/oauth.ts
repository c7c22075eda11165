import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { OAuthCallbackQuerySchema, OAuthParamsSchema } from '../../../schemas/auth.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import { Errors } from '../../errors.js'
import { completeSignIn, refuseIfLocked } from './sign-in.js'

/** CONTRACT section 5: sign-in through Google, GitHub or Microsoft. */
const oauth: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/:provider/authorize', {
    schema: {
      tags: ['oauth'],
      summary: 'Redirect to the provider with state and a PKCE challenge',
      params: OAuthParamsSchema,
      response: { 302: { type: 'null', description: 'Redirect to the provider (Location header)' }, ...errorResponses({}, 404) }
    }
  }, async (request, reply) => await reply.redirect(await fastify.oauth.authorizationUrl(request.params.provider), 302))

  fastify.get('/:provider/callback', {
    schema: {
      tags: ['oauth'],
      summary: 'Finish the provider sign-in: a token pair, or an MFA challenge',
      params: OAuthParamsSchema,
      querystring: OAuthCallbackQuerySchema,
      response: { 200: SignInResultResponseSchema, ...errorResponses({}, 401, 404, 409, 423, 502) }
    }
  }, async (request) => {
    const signIn = await fastify.oauth.callback(request.params.provider, request.query)
    const principal = await fastify.repositories.users.findPrincipal(signIn.userId)
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    await refuseIfLocked(fastify, request, principal.id, { provider: signIn.provider })
    if (signIn.created) {
      request.audit('user.created', { outcome: 'success', actorId: signIn.userId, targetId: signIn.userId, details: { provider: signIn.provider } })
    }
    request.audit('auth.oauth_login', {
      outcome: 'success', actorId: signIn.userId, targetId: signIn.userId, details: { provider: signIn.provider, created: signIn.created, linked: signIn.linked }
    })
    return { data: await completeSignIn(fastify, request, principal, {}, `oauth:${signIn.provider}`) }
  })
}

export default oauth
