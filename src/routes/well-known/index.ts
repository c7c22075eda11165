import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Static, Type } from '@sinclair/typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { JwksSchema, OpenIdConfigurationSchema } from '../../../schemas/keys.js'
import { AUTHORIZATION_SERVER_PATH } from '../../authorization-server/paths.js'
import { authorizationServerIssuer } from '../../config/index.js'
import { acceptedAlgorithms, publicJwks } from '../../security/signing-keys.js'

/**
 * Caches may keep these: they hold no personal data, and a resource server that meets an
 * unknown `kid` fetches the set again (jose's createRemoteJWKSet does).
 */
type OpenIdConfiguration = Static<typeof OpenIdConfigurationSchema>

const PUBLIC_CACHING = 'public, max-age=300'
const CACHING = { 'Cache-Control': Type.Literal(PUBLIC_CACHING, { description: 'Caches may keep the answer for 5 minutes' }) }
const DISCOVERY_CACHING = {
  'Cache-Control': Type.Union([Type.Literal(PUBLIC_CACHING), Type.Literal('no-store')], {
    description: 'Caches may keep the answer for 5 minutes, unless its addresses are built on the address the request was made to (JWT_ISSUER is not an http(s) URL): then none may'
  })
}

/**
 * Public keys and discovery for services that verify our tokens themselves (docs/api.md,
 * "Signing keys"); public, in the general rate-limit tier.
 */
const wellKnown: FastifyPluginAsyncTypebox = async (fastify) => {
  const { jwt } = fastify.config
  const jwks = { keys: publicJwks(jwt) }
  const algorithms = acceptedAlgorithms(jwt)
  // With JWT_ISSUER an http(s) address the document does not depend on the Host header a
  // client sends; an issuer that is a name, or another kind of URI, locates nothing.
  const configuredBase = authorizationServerIssuer(fastify.config)
  // A document built on the request's Host (or X-Forwarded-Host) header must not be kept: a
  // cache would hand the addresses one client sent to every other.
  const discoveryCaching = configuredBase === null ? 'no-store' : PUBLIC_CACHING

  fastify.get('/jwks.json', {
    config: { access: 'public' },
    schema: {
      tags: ['keys'],
      operationId: 'keys.jwks',
      summary: 'Public keys that verify access tokens (JWK Set)',
      response: { 200: described(JwksSchema, 'The JWK Set', CACHING), ...errorResponses({}) }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', PUBLIC_CACHING)
    return jwks
  })

  /**
   * The authorization server's discovery document (it serves it under /oidc), on JWT_ISSUER's
   * address, with this service's own members kept (docs/api.md, "Authorization server").
   */
  async function readAuthorizationServerDocument (base: string): Promise<OpenIdConfiguration> {
    const answer = await fastify.inject({ method: 'GET', url: `${AUTHORIZATION_SERVER_PATH}/.well-known/openid-configuration` })
    const document = answer.json<OpenIdConfiguration>()
    return {
      ...document,
      // ID tokens' algorithms are the provider's, exactly; the API's tokens' have their own member.
      api_token_signing_alg_values_supported: algorithms,
      login_endpoint: `${base}/api/v1/auth/login`,
      refresh_endpoint: `${base}/api/v1/auth/refresh`,
      logout_endpoint: `${base}/api/v1/auth/logout`,
      ...(fastify.config.authorizationServerRegistrationToken !== null && { registration_endpoint: `${base}/oidc/reg` })
    }
  }
  let authorizationServerDocument: OpenIdConfiguration | undefined

  fastify.get('/openid-configuration', {
    config: { access: 'public' },
    schema: {
      tags: ['keys'],
      operationId: 'keys.discovery',
      summary: 'Discovery: issuer, JWKS address, token endpoints, algorithms',
      response: { 200: described(OpenIdConfigurationSchema, 'The discovery document', DISCOVERY_CACHING), ...errorResponses({}) }
    }
  }, async (request, reply) => {
    if (configuredBase !== null && fastify.authorizationServer !== null) {
      reply.header('cache-control', PUBLIC_CACHING)
      authorizationServerDocument ??= await readAuthorizationServerDocument(configuredBase)
      return authorizationServerDocument
    }
    const base = configuredBase ?? `${request.protocol}://${request.host}`
    reply.header('cache-control', discoveryCaching)
    return {
      issuer: jwt.issuer ?? base,
      jwks_uri: `${base}/.well-known/jwks.json`,
      token_endpoint: `${base}/api/v1/auth/login`,
      refresh_endpoint: `${base}/api/v1/auth/refresh`,
      logout_endpoint: `${base}/api/v1/auth/logout`,
      userinfo_endpoint: `${base}/api/v1/auth/me`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: algorithms,
      api_token_signing_alg_values_supported: algorithms,
      token_endpoint_auth_methods_supported: ['none'],
      claims_supported: ['sub', 'iss', 'iat', 'exp', 'jti', 'roles', 'type']
    }
  })
}

export default wellKnown
