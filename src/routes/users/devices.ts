import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { DEVICE_FIELDS, DeviceBodySchema, DeviceCollectionSchema, DeviceParamsSchema, DeviceResponseSchema } from '../../../schemas/devices.js'

/** A user's trusted devices, at most five (docs/api.md, "Trusted devices"). */
const devices: FastifyPluginAsyncTypebox = async (fastify) => {
  const { devices: trusted } = fastify.services

  fastify.get('/:id/devices', {
    config: { access: { permission: 'manage_users', self: 'read' } },
    schema: {
      tags: ['devices'],
      operationId: 'users.devices.list',
      summary: 'A user\'s trusted devices',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(DEVICE_FIELDS),
      response: { 200: described(DeviceCollectionSchema, 'A page of the user\'s trusted devices'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await trusted.list(request.serviceContext, request.params.id, request.query))

  fastify.post('/:id/devices', {
    config: { access: { permission: 'manage_users', self: 'write' } },
    schema: {
      tags: ['devices'],
      operationId: 'users.devices.create',
      summary: 'Trust a device (the sixth is 409)',
      params: IdParamsSchema,
      body: DeviceBodySchema,
      response: { 201: described(DeviceResponseSchema, 'Trusted: the device'), ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request, reply) => {
    const device = await trusted.add(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).send({ data: device })
  })

  fastify.delete('/:id/devices/:deviceId', {
    config: { access: { permission: 'manage_users', self: 'delete' } },
    schema: {
      tags: ['devices'],
      operationId: 'users.devices.delete',
      summary: 'Stop trusting a device (by record id or device_id)',
      params: DeviceParamsSchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await trusted.remove(request.serviceContext, request.params.id, request.params.deviceId)
    return await reply.code(204).send()
  })
}

export default devices
