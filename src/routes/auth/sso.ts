import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { SsoDiscoveryBodySchema, SsoDiscoveryResponseSchema } from '../../../schemas/sso.js'

/** Home-realm discovery (docs/api.md, "Enterprise sign-in"). */
const ssoDiscovery: FastifyPluginAsyncTypebox = async (fastify) => {
  const { ssoDiscovery: discovery } = fastify.services

  fastify.post('/sso', {
    config: { access: 'public' },
    schema: {
      tags: ['sso'],
      operationId: 'auth.sso.discover',
      summary: 'Where an address (by its verified domain) or an organization (by slug) signs in: its SSO connections',
      body: SsoDiscoveryBodySchema,
      response: {
        200: described(SsoDiscoveryResponseSchema, 'The organization and its enabled connections'),
        ...errorResponses({ body: true }, 404)
      }
    }
  }, async (request) => ({ data: await discovery.discover(request.body) }))
}

export default ssoDiscovery
