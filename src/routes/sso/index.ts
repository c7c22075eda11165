import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { OAuthAuthorizeQuerySchema, OAuthCallbackQuerySchema } from '../../../schemas/auth.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SamlAcsBodySchema, SsoConnectionIdParamsSchema } from '../../../schemas/sso.js'

/**
 * A signed SAML response with its certificate and a person's groups runs past the API's 10 KB
 * bodies; its signature check costs in proportion to its size, so no more than this.
 */
const ACS_BODY_LIMIT = 128 * 1024

const redirect = (description: string, location: string) => Type.Null({
  description, headers: { Location: Type.String({ description: location }) }
})

/**
 * Each organization's connection (docs/api.md, "Enterprise sign-in"): as a SAML service
 * provider, its metadata, the start of a sign-in, and the ACS the IdP posts its response to; as
 * an OpenID client, the start of a sign-in and the callback the provider redirects to.
 */
const sso: FastifyPluginAsyncTypebox = async (fastify) => {
  const { ssoConnections, samlSignIn, oidcSignIn } = fastify.services
  // The ACS takes the IdP's form post (the HTTP-POST binding); only these routes parse forms.
  await fastify.register(formbody)

  fastify.get('/saml/:connectionId/metadata', {
    config: { access: 'public' },
    schema: {
      tags: ['sso'],
      operationId: 'sso.saml.metadata',
      summary: 'The service provider\'s SAML metadata for a connection (its entity ID is this URL)',
      params: SsoConnectionIdParamsSchema,
      produces: ['application/samlmetadata+xml'],
      response: { 200: Type.String({ description: 'The metadata (an EntityDescriptor)' }), ...errorResponses({}, 404) }
    }
  }, async (request, reply) => await reply.type('application/samlmetadata+xml; charset=utf-8')
    .send(await ssoConnections.serviceProviderMetadata(request.params.connectionId)))

  fastify.get('/saml/:connectionId/sign-in', {
    config: { access: 'public', signInRate: true },
    schema: {
      tags: ['sso'],
      operationId: 'sso.saml.signIn',
      summary: 'Send the browser to the organization\'s IdP with an AuthnRequest (HTTP-Redirect); redirect_to and a PKCE challenge required',
      params: SsoConnectionIdParamsSchema,
      querystring: OAuthAuthorizeQuerySchema,
      response: {
        302: redirect('To the identity provider', 'The IdP\'s SSO URL with SAMLRequest and RelayState'),
        ...errorResponses({}, 404, 409)
      }
    }
  }, async (request, reply) =>
    await reply.redirect(await samlSignIn.start(request.params.connectionId, request.query), 302))

  fastify.post('/saml/:connectionId/acs', {
    config: { access: 'public', signInRate: true },
    bodyLimit: ACS_BODY_LIMIT,
    schema: {
      tags: ['sso'],
      operationId: 'sso.saml.acs',
      summary: 'The Assertion Consumer Service (HTTP-POST): back to the browser application with a one-time code, or an error code',
      params: SsoConnectionIdParamsSchema,
      consumes: ['application/x-www-form-urlencoded'],
      body: SamlAcsBodySchema,
      response: {
        302: redirect('Back to the browser application',
          'redirect_to?code=<one-time code, 60 s> or redirect_to?error=<error code>; for an IdP-initiated response, where the connection allows it, ' +
          'idp_initiated_login_url?connection_id=<id> (nobody is signed in: the application starts a sign-in)'),
        ...errorResponses({ body: true })
      }
    }
  }, async (request, reply) => {
    const back = await samlSignIn.finish(request.serviceContext, request.params.connectionId, request.body)
    return await reply.redirect(back, 302)
  })

  fastify.get('/oidc/:connectionId/sign-in', {
    config: { access: 'public', signInRate: true },
    schema: {
      tags: ['sso'],
      operationId: 'sso.oidc.signIn',
      summary: 'Send the browser to the organization\'s OpenID provider (authorization code with PKCE); redirect_to and a PKCE challenge required',
      params: SsoConnectionIdParamsSchema,
      querystring: OAuthAuthorizeQuerySchema,
      response: {
        302: redirect('To the OpenID provider', 'Its authorization endpoint with state, nonce and a PKCE challenge'),
        ...errorResponses({}, 404, 409, 502)
      }
    }
  }, async (request, reply) =>
    await reply.redirect(await oidcSignIn.start(request.params.connectionId, request.query), 302))

  fastify.get('/oidc/callback', {
    config: { access: 'public', signInRate: true },
    schema: {
      tags: ['sso'],
      operationId: 'sso.oidc.callback',
      summary: 'The redirect URI every OpenID connection\'s provider answers at (its state names the flow): ' +
        'back to the browser application with a one-time code, or an error code',
      querystring: OAuthCallbackQuerySchema,
      response: {
        302: redirect('Back to the browser application', 'redirect_to?code=<one-time code, 60 s> or redirect_to?error=<error code>'),
        ...errorResponses({})
      }
    }
  }, async (request, reply) =>
    await reply.redirect(await oidcSignIn.finish(request.serviceContext, request.query), 302))
}

export default sso
