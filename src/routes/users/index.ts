import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'
import { USER_FIELDS, UserCollectionSchema, UserCreateBodySchema, UserPatchBodySchema, UserReplaceBodySchema, UserResponseSchema } from '../../../schemas/user.js'
import deletion from './deletion.js'
import devices from './devices.js'
import impersonation from './impersonation.js'
import accountExport from './export.js'
import userPosts from './posts.js'
import roles from './roles.js'
import support from './support.js'
import suspension from './suspension.js'

/** Users (docs/api.md, "Users"). */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts } = fastify.services
  await fastify.register(roles)
  await fastify.register(suspension)
  await fastify.register(support)
  await fastify.register(impersonation)
  await fastify.register(devices)
  await fastify.register(userPosts)
  await fastify.register(accountExport)
  await fastify.register(deletion)

  fastify.get('', {
    config: { access: { permission: 'read' } },
    schema: {
      tags: ['users'],
      operationId: 'users.list',
      summary: 'List users',
      querystring: CollectionQuerySchema(USER_FIELDS),
      response: { 200: described(UserCollectionSchema, 'A page of users'), ...errorResponses({}, 401, 403) }
    }
  }, async (request) => await accounts.list(request.query))

  fastify.post('', {
    config: { access: 'public' },
    schema: {
      tags: ['users'],
      operationId: 'users.create',
      summary: 'Register a user (role `user`)',
      body: UserCreateBodySchema,
      response: { 201: described(UserResponseSchema, 'Registered: the user', LOCATION), ...errorResponses({ body: true }, 409) }
    }
  }, async (request, reply) => {
    const user = await accounts.register(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/users/${user.id}`).send({ data: user })
  })

  fastify.get('/:id', {
    config: { access: { permission: 'read', self: 'read' } },
    schema: {
      tags: ['users'],
      operationId: 'users.get',
      summary: 'Get a user',
      params: IdParamsSchema,
      response: { 200: described(UserResponseSchema, 'The user'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await accounts.get(request.params.id) }))

  const updates = [
    ['PUT', 'users.replace', UserReplaceBodySchema, 'Replace a user\'s email and name (and optionally password)'],
    ['PATCH', 'users.update', UserPatchBodySchema, 'Update some of a user\'s fields']
  ] as const
  for (const [method, operationId, body, summary] of updates) {
    fastify.route({
      method,
      url: '/:id',
      config: { access: { permission: 'manage_users', self: 'write' } },
      schema: {
        tags: ['users'],
        operationId,
        summary,
        params: IdParamsSchema,
        body,
        response: { 200: described(UserResponseSchema, 'The updated user (a new password, e-mail or phone is a sensitive change: it needs a proof, REAUTHENTICATION_REQUIRED otherwise)'), ...errorResponses({ body: true }, 401, 403, 404, 409, 423) }
      },
      handler: async (request) => ({
        data: await accounts.update(request.serviceContext, request.params.id, request.body)
      })
    })
  }

  fastify.delete('/:id', {
    config: { access: { permission: 'manage_users' }, adminOperation: true },
    schema: {
      tags: ['users'],
      operationId: 'users.delete',
      summary: 'Delete a user (idempotent: a missing user also answers 204); deleting one\'s own account is a sensitive change: needs a proof',
      params: IdParamsSchema,
      body: ProofBodySchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request, reply) => {
    await accounts.remove(request.serviceContext, request.params.id, request.body ?? {})
    return await reply.code(204).send()
  })
}

export default users
