import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { described, LOCATION } from '../../../schemas/common.js'
import { type ErrorEnvelope, errorResponsesIn } from '../../../schemas/errors.js'
import {
  SCIM, SCIM_MEDIA_TYPE, ScimDirectoryPathSchema, ScimDiscoverySchema, type ScimErrorBody, ScimErrorSchema,
  ScimGroupInputSchema, ScimGroupListSchema, ScimGroupResponseSchema, ScimListQuerySchema, ScimPatchSchema,
  ScimResourceParamsSchema, ScimUserInputSchema, ScimUserListSchema, ScimUserResponseSchema
} from '../../../schemas/scim.js'
import { jsonBodyParser } from '../../http/validation.js'

/** A group's members run past the API's 10 KB bodies (an IdP pushes thousands in one PATCH). */
const SCIM_BODY_LIMIT = 1024 * 1024

/** SCIM's scimType for an error of the service's table (RFC 7644 §3.12). */
function scimTypeOf ({ error }: ErrorEnvelope): string | undefined {
  if (error.code === 'CONFLICT') return 'uniqueness'
  if (error.code !== 'VALIDATION_FAILED') return undefined
  const paths = error.details?.flatMap((detail) => 'path' in detail ? [detail.path] : []) ?? []
  if (paths.includes('/filter')) return 'invalidFilter'
  if (error.details?.some((detail) => 'message' in detail && detail.message === 'body is not valid JSON') === true) return 'invalidSyntax'
  return 'invalidValue'
}

/** The error envelope as SCIM's error body: the status as a string, the code's message and its details in `detail`. */
function scimError (status: number, envelope: ErrorEnvelope): ScimErrorBody {
  const scimType = scimTypeOf(envelope)
  const details = (envelope.error.details ?? []).flatMap((detail) => 'path' in detail && 'message' in detail
    ? [`${String(detail.path)} ${String(detail.message)}`.trim()]
    : [])
  return {
    schemas: [SCIM.error],
    status: String(status),
    ...(scimType !== undefined && { scimType }),
    detail: [envelope.error.message, ...details].join(': ')
  }
}

/** SCIM's error body for each status a route can answer, with the codes of the service's table behind it. */
const scimErrors = (options: { body?: boolean }, ...statuses: Array<404 | 409>) =>
  errorResponsesIn(ScimErrorSchema, options, 401, ...statuses)

/**
 * SCIM 2.0 (RFC 7643, RFC 7644) for each organization's directory (docs/api.md, "SCIM
 * provisioning"), at its own base URL, with its own bearer token; bodies in application/scim+json
 * (or JSON), errors in SCIM's error body.
 */
const scim: FastifyPluginAsyncTypebox = async (fastify) => {
  const { scimUsers: users, scimGroups: groups } = fastify.services
  fastify.addContentTypeParser(SCIM_MEDIA_TYPE, { parseAs: 'string', bodyLimit: SCIM_BODY_LIMIT }, jsonBodyParser(fastify))
  // Answers, errors included, are SCIM's media type.
  fastify.addHook('onRequest', (_request, reply, done) => {
    void reply.type(`${SCIM_MEDIA_TYPE}; charset=utf-8`)
    done()
  })
  const config = (directory = 'directoryId') => ({
    access: { directory }, errorRepresentation: { mediaType: SCIM_MEDIA_TYPE, body: scimError }
  })

  for (const [path, read, summary] of [
    ['ServiceProviderConfig', users.serviceProviderConfig.bind(users), 'What the SCIM endpoint supports'],
    ['ResourceTypes', users.resourceTypes.bind(users), 'The resource types: User and Group'],
    ['Schemas', users.schemas.bind(users), 'The attributes of User and Group the service reads']
  ] as const) {
    fastify.get(`/:directoryId/${path}`, {
      config: config(),
      schema: {
        tags: ['scim'],
        operationId: `scim.${path[0]?.toLowerCase()}${path.slice(1)}`,
        summary,
        params: ScimDirectoryPathSchema,
        produces: [SCIM_MEDIA_TYPE],
        response: { 200: described(ScimDiscoverySchema, summary), ...scimErrors({}) }
      }
    }, async (request) => read(request.serviceContext))
  }

  fastify.get('/:directoryId/Users', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.list',
      summary: 'The directory\'s users: filter (userName eq "…" is what IdPs send), startIndex, count',
      params: ScimDirectoryPathSchema,
      querystring: ScimListQuerySchema,
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimUserListSchema, 'A ListResponse of users'), ...scimErrors({}) }
    }
  }, async (request) => await users.listUsers(request.serviceContext, request.query))

  fastify.post('/:directoryId/Users', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.create',
      summary: 'Provision a person: the account (an address of a verified domain) and, when active, the membership',
      params: ScimDirectoryPathSchema,
      body: ScimUserInputSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 201: described(ScimUserResponseSchema, 'Created: the user', LOCATION), ...scimErrors({ body: true }, 409) }
    }
  }, async (request, reply) => {
    const user = await users.createUser(request.serviceContext, request.body)
    return await reply.code(201).header('location', user.meta.location).send(user)
  })

  fastify.get('/:directoryId/Users/:resourceId', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.get',
      summary: 'A user of the directory',
      params: ScimResourceParamsSchema,
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimUserResponseSchema, 'The user'), ...scimErrors({}, 404) }
    }
  }, async (request) => await users.getUser(request.serviceContext, request.params.resourceId))

  fastify.put('/:directoryId/Users/:resourceId', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.replace',
      summary: 'Replace a user; active: false deprovisions (membership ended, the organization\'s tokens revoked)',
      params: ScimResourceParamsSchema,
      body: ScimUserInputSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimUserResponseSchema, 'The user'), ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request) => await users.replaceUser(request.serviceContext, request.params.resourceId, request.body))

  fastify.patch('/:directoryId/Users/:resourceId', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.patch',
      summary: 'Change a user by PatchOp operations (Entra ID\'s and Okta\'s shapes)',
      params: ScimResourceParamsSchema,
      body: ScimPatchSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimUserResponseSchema, 'The user'), ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request) => await users.patchUser(request.serviceContext, request.params.resourceId, request.body))

  fastify.delete('/:directoryId/Users/:resourceId', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.users.delete',
      summary: 'Deprovision and forget a user: the membership ends; the account stays',
      params: ScimResourceParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request, reply) => {
    await users.deleteUser(request.serviceContext, request.params.resourceId)
    return await reply.code(204).send()
  })

  fastify.get('/:directoryId/Groups', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.list',
      summary: 'The directory\'s groups: filter (displayName eq "…"), startIndex, count, excludedAttributes=members',
      params: ScimDirectoryPathSchema,
      querystring: ScimListQuerySchema,
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimGroupListSchema, 'A ListResponse of groups'), ...scimErrors({}) }
    }
  }, async (request) => await groups.listGroups(request.serviceContext, request.query))

  fastify.post('/:directoryId/Groups', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.create',
      summary: 'Make a group; its display name maps its members to a role',
      params: ScimDirectoryPathSchema,
      body: ScimGroupInputSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 201: described(ScimGroupResponseSchema, 'Created: the group', LOCATION), ...scimErrors({ body: true }, 409) }
    }
  }, async (request, reply) => {
    const group = await groups.createGroup(request.serviceContext, request.body)
    return await reply.code(201).header('location', group.meta.location).send(group)
  })

  fastify.get('/:directoryId/Groups/:resourceId', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.get',
      summary: 'A group with its members',
      params: ScimResourceParamsSchema,
      querystring: Type.Pick(ScimListQuerySchema, ['attributes', 'excludedAttributes']),
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimGroupResponseSchema, 'The group'), ...scimErrors({}, 404) }
    }
  }, async (request) => await groups.getGroup(request.serviceContext, request.params.resourceId, request.query))

  fastify.put('/:directoryId/Groups/:resourceId', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.replace',
      summary: 'Replace a group: its name and members; members\' roles follow',
      params: ScimResourceParamsSchema,
      body: ScimGroupInputSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimGroupResponseSchema, 'The group'), ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request) => await groups.replaceGroup(request.serviceContext, request.params.resourceId, request.body))

  fastify.patch('/:directoryId/Groups/:resourceId', {
    config: config(),
    bodyLimit: SCIM_BODY_LIMIT,
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.patch',
      summary: 'Add or remove members, or rename, by PatchOp operations',
      params: ScimResourceParamsSchema,
      body: ScimPatchSchema,
      consumes: [SCIM_MEDIA_TYPE, 'application/json'],
      produces: [SCIM_MEDIA_TYPE],
      response: { 200: described(ScimGroupResponseSchema, 'The group'), ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request) => await groups.patchGroup(request.serviceContext, request.params.resourceId, request.body))

  fastify.delete('/:directoryId/Groups/:resourceId', {
    config: config(),
    schema: {
      tags: ['scim'],
      operationId: 'scim.groups.delete',
      summary: 'Remove a group: its members\' roles follow the groups they are left in',
      params: ScimResourceParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...scimErrors({ body: true }, 404, 409) }
    }
  }, async (request, reply) => {
    await groups.deleteGroup(request.serviceContext, request.params.resourceId)
    return await reply.code(204).send()
  })
}

export default scim
