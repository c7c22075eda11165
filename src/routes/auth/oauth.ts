import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { OAuthCallbackQuerySchema, OAuthParamsSchema } from '../../../schemas/auth.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SignInResultResponseSchema } from '../../../schemas/mfa.js'

/** Sign-in through Google, GitHub or Microsoft (docs/api.md, "OAuth sign-in"). */
const oauth: FastifyPluginAsyncTypebox = async (fastify) => {
  const { oauth: providers, signIn } = fastify.services
  fastify.get('/:provider/authorize', {
    schema: {
      tags: ['oauth'],
      summary: 'Redirect to the provider with state and a PKCE challenge',
      params: OAuthParamsSchema,
      response: { 302: { type: 'null', description: 'Redirect to the provider (Location header)' }, ...errorResponses({}, 404) }
    }
  }, async (request, reply) => await reply.redirect(await providers.authorizationUrl(request.params.provider), 302))

  fastify.get('/:provider/callback', {
    schema: {
      tags: ['oauth'],
      summary: 'Finish the provider sign-in: a token pair, or an MFA challenge',
      params: OAuthParamsSchema,
      querystring: OAuthCallbackQuerySchema,
      response: { 200: SignInResultResponseSchema, ...errorResponses({}, 401, 404, 409, 423, 502) }
    }
  }, async (request) => ({ data: await signIn.withProvider(request.serviceContext, request.params.provider, request.query) }))
}

export default oauth
