import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { OAuthCallbackQuerySchema, OAuthParamsSchema } from '../../../schemas/auth.js'
import { described, PUBLIC } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'

/** Sign-in through Google, GitHub or Microsoft (docs/api.md, "OAuth sign-in"). */
const oauth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { oauth: providers, signIn } = fastify.services
  fastify.get('/:provider/authorize', {
    schema: {
      tags: ['oauth'],
      operationId: 'auth.oauth.authorize',
      summary: 'Redirect to the provider with state and a PKCE challenge',
      security: PUBLIC,
      params: OAuthParamsSchema,
      response: { 302: Type.Null({ description: 'Redirect to the provider', headers: { Location: Type.String({ description: 'The provider\'s authorization address, with state and a PKCE challenge' }) } }), ...errorResponses({}, 404) }
    }
  }, async (request, reply) => await reply.redirect(await providers.authorizationUrl(request.params.provider), 302))

  fastify.get('/:provider/callback', {
    schema: {
      tags: ['oauth'],
      operationId: 'auth.oauth.callback',
      summary: 'Finish the provider sign-in: a token pair, or an MFA challenge',
      security: PUBLIC,
      params: OAuthParamsSchema,
      querystring: OAuthCallbackQuerySchema,
      response: { 200: described(SignInResultResponseSchema, 'Signed in: a token pair, or an MFA challenge when the account has MFA on (`mfa_required`)'), ...errorResponses({}, 401, 404, 409, 423, 502) }
    }
  }, async (request) => ({ data: await signIn.withProvider(request.serviceContext, request.params.provider, request.query) }))
}

export default oauth
