import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  DELIVERY_FIELDS, DeliveryParamsSchema, WebhookDeliveryCollectionSchema, WebhookDeliveryResponseSchema
} from '../../../schemas/webhooks.js'

/** An endpoint's deliveries, a retry, and a test event (docs/api.md, "Webhooks"). */
const deliveries: FastifyPluginAsyncTypebox = async (fastify) => {
  const { webhooks: service } = fastify.services

  fastify.get('/:id/deliveries', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.deliveries.list',
      summary: 'An endpoint\'s deliveries, newest first: event, tries, last answer and next try',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(DELIVERY_FIELDS),
      response: { 200: described(WebhookDeliveryCollectionSchema, 'A page of deliveries'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await service.deliveries(request.params.id, request.query))

  fastify.post('/:id/deliveries/:deliveryId/retry', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.deliveries.retry',
      summary: 'Send a delivery again now, whatever became of it (the endpoint must be enabled)',
      params: DeliveryParamsSchema,
      response: {
        202: described(WebhookDeliveryResponseSchema, 'Due now: the delivery'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const delivery = await service.retry(request.serviceContext, request.params.id, request.params.deliveryId)
    return await reply.code(202).send({ data: delivery })
  })

  fastify.post('/:id/test', {
    config: { access: { permission: 'admin' } },
    schema: {
      tags: ['webhooks'],
      operationId: 'webhooks.test',
      summary: 'Send the endpoint a `webhook.test` event',
      params: IdParamsSchema,
      response: {
        202: described(WebhookDeliveryResponseSchema, 'Stored and being sent: the delivery'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const delivery = await service.test(request.serviceContext, request.params.id)
    return await reply.code(202).send({ data: delivery })
  })
}

export default deliveries
