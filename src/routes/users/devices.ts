import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { BEARER, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { DEVICE_FIELDS, DeviceBodySchema, DeviceCollectionSchema, DeviceParamsSchema, DeviceResponseSchema } from '../../../schemas/security.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { parseCollectionQuery } from '../../collection/query.js'
import { Errors } from '../../errors.js'

/** CONTRACT section 6: a user's trusted devices (zero trust), at most five. */
const devices: FastifyPluginAsyncTypebox = async (fastify) => {
  const { devices: repository, users } = fastify.repositories
  const guard = [fastify.authenticate, fastify.requireSelfOr('manage_users')]

  async function assertUser (id: string) {
    if (await users.findById(id) === undefined) throw new Errors.NOT_FOUND('User')
  }

  fastify.get('/:id/devices', {
    onRequest: guard,
    schema: {
      tags: ['devices'],
      summary: 'A user\'s trusted devices',
      security: BEARER,
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(DEVICE_FIELDS),
      response: { 200: DeviceCollectionSchema, ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => {
    await assertUser(request.params.id)
    const collection = parseCollectionQuery(request.query, { ...DEVICE_FIELDS, defaultSort: [{ field: 'created_at', descending: false }] }, fastify.cursors)
    return collectionEnvelope(await repository.list(request.params.id, collection), collection.fields)
  })

  fastify.post('/:id/devices', {
    onRequest: guard,
    schema: {
      tags: ['devices'],
      summary: 'Trust a device (the sixth is 409)',
      security: BEARER,
      params: IdParamsSchema,
      body: DeviceBodySchema,
      response: { 201: DeviceResponseSchema, ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request, reply) => {
    const { id } = request.params
    await assertUser(id)
    const device = await repository.add(id, request.body.device_id, request.body.name)
    request.audit('device.added', { outcome: 'success', targetId: id, details: { device_id: device.device_id, name: device.name } })
    return await reply.code(201).send({ data: device })
  })

  fastify.delete('/:id/devices/:deviceId', {
    onRequest: guard,
    schema: {
      tags: ['devices'],
      summary: 'Stop trusting a device (by record id or device_id)',
      security: BEARER,
      params: DeviceParamsSchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const { id, deviceId } = request.params
    if (!await repository.remove(id, deviceId)) throw new Errors.NOT_FOUND('Device')
    request.audit('device.removed', { outcome: 'success', targetId: id, details: { device: deviceId } })
    return await reply.code(204).send()
  })
}

export default devices
