import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  WEBHOOK_FIELDS, WebhookCollectionSchema, WebhookCreateSchema, WebhookResponseSchema, WebhookUpdateSchema,
  WebhookWithSecretResponseSchema
} from '../../../schemas/webhooks.js'
import deliveries from './deliveries.js'

/** Webhook endpoints (docs/api.md, "Webhooks"): the `admin` permission's, as is everything they receive. */
const webhooks: FastifyPluginAsyncTypebox = async (fastify) => {
  const { webhooks: service } = fastify.services
  await fastify.register(deliveries)

  fastify.post('', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.create',
      summary: 'Create a webhook endpoint: its signing secret is in this answer only',
      body: WebhookCreateSchema,
      response: {
        201: described(WebhookWithSecretResponseSchema, 'Created: the endpoint with its signing secret', LOCATION),
        ...errorResponses({ body: true }, 401, 403)
      }
    }
  }, async (request, reply) => {
    const webhook = await service.create(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/webhooks/${webhook.id}`).send({ data: webhook })
  })

  fastify.get('', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.list',
      summary: 'The webhook endpoints',
      querystring: CollectionQuerySchema(WEBHOOK_FIELDS),
      response: { 200: described(WebhookCollectionSchema, 'A page of endpoints'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => await service.list(request.query))

  fastify.get('/:id', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.get',
      summary: 'A webhook endpoint (never its secret)',
      params: IdParamsSchema,
      response: { 200: described(WebhookResponseSchema, 'The endpoint'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.get(request.params.id) }))

  fastify.patch('/:id', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.update',
      summary: 'Change an endpoint\'s URL, events, description, or whether it is enabled (enabling sends what waited)',
      params: IdParamsSchema,
      body: WebhookUpdateSchema,
      response: { 200: described(WebhookResponseSchema, 'The endpoint'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.update(request.serviceContext, request.params.id, request.body) }))

  fastify.delete('/:id', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.delete',
      summary: 'Delete an endpoint and its deliveries',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted (or there was none)' }, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })

  fastify.post('/:id/rotate-secret', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.rotateSecret',
      summary: 'A new signing secret, shown this once; deliveries are also signed with the previous one for 24 hours',
      params: IdParamsSchema,
      response: {
        200: described(WebhookWithSecretResponseSchema, 'The endpoint with its new signing secret'),
        ...errorResponses({ body: true }, 401, 403, 404)
      }
    }
  }, async (request) => ({ data: await service.rotateSecret(request.serviceContext, request.params.id) }))
}

export default webhooks
