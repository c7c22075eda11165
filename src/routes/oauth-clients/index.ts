import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  OAUTH_CLIENT_FIELDS, OAuthClientCollectionSchema, OAuthClientCreateSchema, OAuthClientParamsSchema,
  OAuthClientResponseSchema, OAuthClientUpdateSchema, OAuthClientWithSecretResponseSchema
} from '../../../schemas/oauth-clients.js'

/**
 * The applications that sign people in with the service (docs/api.md, "OAuth clients"): the
 * `admin` permission's; the changes are admin operations (their rate-limit tier and the
 * zero-trust evaluation), reads are not, as reads of users are not.
 */
const oauthClients: FastifyPluginAsyncTypebox = async (fastify) => {
  const { oauthClients: service } = fastify.services
  const access = { permission: 'admin' } as const

  fastify.post('', {
    config: { access, adminOperation: true },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.create',
      summary: 'Register an OAuth client: a confidential client\'s secret is in this answer only',
      body: OAuthClientCreateSchema,
      response: {
        201: described(OAuthClientWithSecretResponseSchema, 'Created: the client with its secret (null for a public client)', LOCATION),
        ...errorResponses({ body: true }, 401, 403)
      }
    }
  }, async (request, reply) => {
    const client = await service.create(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/oauth-clients/${client.id}`).send({ data: client })
  })

  fastify.get('', {
    config: { access },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.list',
      summary: 'The registered OAuth clients, newest first',
      querystring: CollectionQuerySchema(OAUTH_CLIENT_FIELDS),
      response: { 200: described(OAuthClientCollectionSchema, 'A page of clients'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => await service.list(request.query))

  fastify.get('/:id', {
    config: { access },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.get',
      summary: 'An OAuth client (never its secret)',
      params: OAuthClientParamsSchema,
      response: { 200: described(OAuthClientResponseSchema, 'The client'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.get(request.params.id) }))

  fastify.patch('/:id', {
    config: { access, adminOperation: true },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.update',
      summary: 'Change a client\'s name, URIs, grants, scopes, or whether it is disabled (disabling revokes what it was issued)',
      params: OAuthClientParamsSchema,
      body: OAuthClientUpdateSchema,
      response: { 200: described(OAuthClientResponseSchema, 'The client'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.update(request.serviceContext, request.params.id, request.body) }))

  fastify.post('/:id/secret', {
    config: { access, adminOperation: true },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.rotateSecret',
      summary: 'A new secret for a confidential client, shown this once; the previous one stops working at once',
      params: OAuthClientParamsSchema,
      response: {
        200: described(OAuthClientWithSecretResponseSchema, 'The client with its new secret'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request) => ({ data: await service.rotateSecret(request.serviceContext, request.params.id) }))

  fastify.delete('/:id', {
    config: { access, adminOperation: true },
    schema: {
      tags: ['oauth-clients'],
      operationId: 'oauthClients.delete',
      summary: 'Delete a client with every code, token and consent issued to it',
      params: OAuthClientParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted (or there was none)' }, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default oauthClients
