import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { BEARER, IdParamsSchema } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { USER_FIELDS, type UserChanges, UserCollectionSchema, UserCreateBodySchema, UserPatchBodySchema, UserReplaceBodySchema, UserResponseSchema } from '../../../schemas/user.js'
import { collectionEnvelope } from '../../collection/envelope.js'
import { parseCollectionQuery } from '../../collection/query.js'
import { Errors, validationFailed } from '../../errors.js'
import { idParam } from '../../plugins/authentication.js'
import { permissionLacked } from '../../security/permissions.js'
import { assertPasswordPolicy, createAccount } from '../../services/accounts.js'
import type { UserUpdate } from '../../store/users.js'
import { checkSecret } from '../auth/sign-in.js'
import devices from './devices.js'
import userPosts from './posts.js'
import roles from './roles.js'

/** Spec 4.1 and CONTRACT section 7. */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  const { repositories, passwords, config } = fastify
  const accountDeps = { users: repositories.users, passwords, passwordPolicy: config.passwordPolicy }
  await fastify.register(roles)
  await fastify.register(devices)
  await fastify.register(userPosts)

  /** CONTRACT section 7: oneself needs `write` (an owner's right), anyone else `manage_users`. */
  const selfOrManageUsers = fastify.requireSelfOr('manage_users', 'write')

  /**
   * Turns a validated body into repository changes. Changing one's own password needs
   * the current one; a `manage_users` caller may reset someone else's without it.
   */
  async function toUpdate (request: FastifyRequest, id: string, body: UserChanges): Promise<UserUpdate> {
    const update: UserUpdate = {}
    if (body.email !== undefined) update.email = body.email
    if (body.name !== undefined) update.name = body.name
    if (body.password === undefined) return update
    assertPasswordPolicy(body.password, config.passwordPolicy)
    if (request.user?.id === id) {
      const current = body.current_password
      if (current === undefined) {
        throw validationFailed([{ path: '/current_password', message: 'is required to change the password' }])
      }
      const stored = await repositories.users.findPasswordHash(id)
      // Held to the sign-in lockout, like a sign-in: a stolen access token must not guess the
      // password here. An account without a password (OAuth only) has nothing to guess.
      const matches = stored !== null && stored !== undefined &&
        await checkSecret(fastify, request, id, 'auth.login_failed', { reason: 'wrong_current_password' }, async () => await passwords.verify(current, stored))
      if (!matches) throw validationFailed([{ path: '/current_password', message: 'does not match the current password' }])
    }
    update.passwordHash = await passwords.hash(body.password)
    return update
  }

  /**
   * Changing or deleting another account needs every permission that account holds
   * (CONTRACT section 6's rule for granting roles): an admin may not reset a super_admin.
   * True when there is such an account (false: it does not exist).
   */
  async function assertMayManage (request: FastifyRequest, id: string): Promise<boolean> {
    const target = await repositories.users.findPrincipal(id)
    if (target === undefined) return false
    if (request.user?.id === id) return true
    const missing = permissionLacked(fastify.authorize(request, 'manage_users'), target.roles)
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
    return true
  }

  async function applyUpdate (request: FastifyRequest, id: string, body: UserChanges) {
    if (!await assertMayManage(request, id)) throw new Errors.NOT_FOUND('User')
    const update = await toUpdate(request, id, body)
    const user = await repositories.users.update(id, update)
    if (user === undefined) throw new Errors.NOT_FOUND('User')
    // A new password ends every session, and with them their access tokens.
    if (update.passwordHash !== undefined) await fastify.sessions.endAll(id, 'password_changed')
    request.audit('user.updated', { outcome: 'success', targetId: id, details: { changed: Object.keys(body).filter((key) => key !== 'current_password') } })
    return { data: user }
  }

  fastify.get('', {
    onRequest: [fastify.authenticate, fastify.requirePermission('read')],
    schema: {
      tags: ['users'],
      summary: 'List users',
      security: BEARER,
      querystring: CollectionQuerySchema(USER_FIELDS),
      response: { 200: UserCollectionSchema, ...errorResponses({}, 401, 403) }
    }
  }, async (request) => {
    const collection = parseCollectionQuery(request.query, {
      ...USER_FIELDS,
      defaultSort: [{ field: 'created_at', descending: false }]
    }, fastify.cursors)
    return collectionEnvelope(await repositories.users.list(collection), collection.fields)
  })

  fastify.post('', {
    schema: {
      tags: ['users'],
      summary: 'Register a user (role `user`)',
      body: UserCreateBodySchema,
      response: { 201: UserResponseSchema, ...errorResponses({ body: true }, 409) }
    }
  }, async (request, reply) => {
    const user = await createAccount(accountDeps, { ...request.body, roles: ['user'] })
    request.audit('user.created', { outcome: 'success', actorId: user.id, targetId: user.id, details: { email: user.email } })
    return await reply.code(201).header('location', `/api/v1/users/${user.id}`).send({ data: user })
  })

  fastify.get('/:id', {
    onRequest: [fastify.authenticate, fastify.requirePermission('read', idParam)],
    schema: {
      tags: ['users'],
      summary: 'Get a user',
      security: BEARER,
      params: IdParamsSchema,
      response: { 200: UserResponseSchema, ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => {
    const user = await repositories.users.findById(request.params.id)
    if (user === undefined) throw new Errors.NOT_FOUND('User')
    return { data: user }
  })

  const updates = [
    ['PUT', UserReplaceBodySchema, 'Replace a user\'s email and name (and optionally password)'],
    ['PATCH', UserPatchBodySchema, 'Update some of a user\'s fields']
  ] as const
  for (const [method, body, summary] of updates) {
    fastify.route({
      method,
      url: '/:id',
      onRequest: [fastify.authenticate, selfOrManageUsers],
      schema: {
        tags: ['users'],
        summary,
        security: BEARER,
        params: IdParamsSchema,
        body,
        response: { 200: UserResponseSchema, ...errorResponses({ body: true }, 401, 403, 404, 409, 423) }
      },
      handler: async (request) => await applyUpdate(request, request.params.id, request.body)
    })
  }

  fastify.delete('/:id', {
    onRequest: [fastify.authenticate, fastify.requirePermission('manage_users')],
    config: { adminOperation: true },
    schema: {
      tags: ['users'],
      summary: 'Delete a user (idempotent: a missing user also answers 204)',
      security: BEARER,
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403) }
    }
  }, async (request, reply) => {
    await assertMayManage(request, request.params.id)
    const deleted = await repositories.users.delete(request.params.id)
    request.audit('user.deleted', { outcome: 'success', targetId: request.params.id, details: { existed: deleted } })
    return await reply.code(204).send()
  })
}

export default users
