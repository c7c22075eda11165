import fastifyCookie from '@fastify/cookie'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyRequest } from 'fastify'
import { OAuthAuthorizeQuerySchema, OAuthCallbackQuerySchema, OAuthExchangeBodySchema, OAuthParamsSchema } from '../../../schemas/auth.js'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'
import { STATE_TTL_MS } from '../../services/sign-in/federated-sign-in.js'

/**
 * The cookie binding a flow's state to the browser that started it (docs/security.md,
 * "Provider sign-in"): sent back on the provider's top-level redirect (Lax), never readable by
 * scripts. Over HTTPS it is `__Host-` prefixed, so only this host, over HTTPS, can have set it
 * (the prefix needs Secure, Path=/ and no Domain); browsers refuse the prefix without Secure,
 * so plain http (local development) keeps the plain name, sent only to these routes. Each
 * protocol reads only its own name. Behind a proxy, TRUST_PROXY and X-Forwarded-Proto tell
 * the protocol (docs/operations.md, "Proxies and client addresses").
 */
function stateCookie (request: FastifyRequest) {
  const common = { httpOnly: true, sameSite: 'lax' } as const
  return request.protocol === 'https'
    ? { name: '__Host-oauth_state', options: { ...common, path: '/', secure: true } }
    : { name: 'oauth_state', options: { ...common, path: '/api/v1/auth/oauth', secure: false } }
}

/** Sign-in through Google, GitHub, Microsoft or any OpenID provider (docs/api.md, "OAuth sign-in"). */
const oauth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { federation: providers, signIn } = fastify.services
  await fastify.register(fastifyCookie)

  fastify.get('/:provider/authorize', {
    config: { access: 'public' },
    schema: {
      tags: ['oauth'],
      operationId: 'auth.oauth.authorize',
      summary: 'Redirect to the provider with state, a PKCE challenge and (OpenID providers) a nonce; browser applications add redirect_to and their own PKCE challenge',
      params: OAuthParamsSchema,
      querystring: OAuthAuthorizeQuerySchema,
      response: {
        302: Type.Null({
          description: 'Redirect to the provider; sets the state cookie',
          headers: {
            Location: Type.String({ description: 'The provider\'s authorization address, with state and a PKCE challenge' }),
            'Set-Cookie': Type.String({ description: 'The flow\'s state, HttpOnly, SameSite=Lax, for 10 minutes: __Host-oauth_state (Secure, Path=/) over HTTPS, oauth_state over http' })
          }
        }),
        ...errorResponses({}, 404, 502)
      }
    }
  }, async (request, reply) => {
    const { url, state } = await providers.authorize(request.params.provider, request.query)
    const cookie = stateCookie(request)
    reply.setCookie(cookie.name, state, { ...cookie.options, maxAge: STATE_TTL_MS / 1000 })
    return await reply.redirect(url, 302)
  })

  fastify.get('/:provider/callback', {
    config: { access: 'public' },
    schema: {
      tags: ['oauth'],
      operationId: 'auth.oauth.callback',
      summary: 'Finish the provider sign-in: a token pair or an MFA challenge, or, for a browser application, a redirect back to it with a one-time code',
      params: OAuthParamsSchema,
      querystring: OAuthCallbackQuerySchema,
      response: {
        200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the account has MFA on (`mfa_required`)'),
        302: Type.Null({
          description: 'Back to the browser application',
          headers: { Location: Type.String({ description: 'redirect_to?code=<one-time code, 60 s> or redirect_to?error=<error code>' }) }
        }),
        ...errorResponses({}, 401, 403, 404, 409, 423, 502)
      }
    }
  }, async (request, reply) => {
    const cookie = stateCookie(request)
    reply.clearCookie(cookie.name, cookie.options)
    const outcome = await signIn.withProvider(
      request.serviceContext, request.params.provider, request.query, request.cookies[cookie.name]
    )
    return 'redirect' in outcome ? await reply.redirect(outcome.redirect, 302) : { data: outcome.result }
  })

  fastify.post('/exchange', {
    config: { access: 'public' },
    schema: {
      operationId: 'auth.oauth.exchange',
      tags: ['oauth'],
      summary: 'Exchange a browser application\'s one-time code and PKCE verifier for a token pair or an MFA challenge',
      body: OAuthExchangeBodySchema,
      response: { 200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the account has MFA on (`mfa_required`)'), ...errorResponses({ body: true }, 403, 423) }
    }
  }, async (request) => ({ data: await signIn.withExchangeCode(request.serviceContext, request.body) }))
}

export default oauth
