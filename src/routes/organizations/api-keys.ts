import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ApiKeyListResponseSchema, ApiKeyWithSecretResponseSchema, OrganizationApiKeyCreateSchema,
  OrganizationApiKeyParamsSchema
} from '../../../schemas/api-keys.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'

/** An organization's API keys (docs/api.md, "API keys"): each acts with an organization role, no person behind it. */
const organizationApiKeys: FastifyPluginAsyncTypebox = async (fastify) => {
  const { apiKeys: service } = fastify.services

  fastify.post('/:id/api-keys', {
    config: { access: { organization: 'id', permission: 'org:update' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.apiKeys.create',
      summary: 'Make an API key acting in the organization with a role no higher than yours: the key is in this answer only',
      params: IdParamsSchema,
      body: OrganizationApiKeyCreateSchema,
      response: {
        201: described(ApiKeyWithSecretResponseSchema, 'Created: the key, shown this once', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const key = await service.createForOrganization(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).header('location', `/api/v1/organizations/${request.params.id}/api-keys/${key.id}`).send({ data: key })
  })

  fastify.get('/:id/api-keys', {
    config: { access: { organization: 'id', permission: 'org:update' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.apiKeys.list',
      summary: 'The organization\'s API keys (never the keys themselves)',
      params: IdParamsSchema,
      response: { 200: described(ApiKeyListResponseSchema, 'The keys, oldest first'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.list(request.serviceContext, request.params.id) }))

  fastify.delete('/:id/api-keys/:keyId', {
    config: { access: { organization: 'id', permission: 'org:update' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.apiKeys.delete',
      summary: 'Delete one of the organization\'s API keys: every instance refuses it within a second',
      params: OrganizationApiKeyParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted (or there was none)' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.keyId, request.params.id)
    return await reply.code(204).send()
  })
}

export default organizationApiKeys
