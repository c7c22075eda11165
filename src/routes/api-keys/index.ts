import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ApiKeyCreateSchema, ApiKeyListResponseSchema, ApiKeyWithSecretResponseSchema
} from '../../../schemas/api-keys.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'

/** A person's API keys (docs/api.md, "API keys"): each acts as the person, within its scopes. */
const apiKeys: FastifyPluginAsyncTypebox = async (fastify) => {
  const { apiKeys: service } = fastify.services

  fastify.post('', {
    config: { access: 'bearer' },
    schema: {
      tags: ['api-keys'],
      operationId: 'apiKeys.create',
      summary: 'Make an API key acting as you with the scopes named: the key is in this answer only (a sensitive change)',
      body: ApiKeyCreateSchema,
      response: {
        201: described(ApiKeyWithSecretResponseSchema, 'Created: the key, shown this once', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 409)
      }
    }
  }, async (request, reply) => {
    const key = await service.createForPerson(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/api-keys/${key.id}`).send({ data: key })
  })

  fastify.get('', {
    config: { access: 'bearer' },
    schema: {
      tags: ['api-keys'],
      operationId: 'apiKeys.list',
      summary: 'Your API keys (never the keys themselves)',
      response: { 200: described(ApiKeyListResponseSchema, 'The keys, oldest first'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => ({ data: await service.list(request.serviceContext) }))

  fastify.delete('/:id', {
    config: { access: 'bearer' },
    schema: {
      tags: ['api-keys'],
      operationId: 'apiKeys.delete',
      summary: 'Delete one of your API keys: every instance refuses it within a second',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted (or there was none)' }, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default apiKeys
