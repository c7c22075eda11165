import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  ScimDirectoryCreateSchema, ScimDirectoryListResponseSchema, ScimDirectoryParamsSchema, ScimDirectoryResponseSchema,
  ScimDirectoryUpdateSchema, ScimDirectoryWithTokenResponseSchema
} from '../../../schemas/scim.js'

/** An organization's SCIM directory (docs/api.md, "SCIM provisioning"). */
const scimDirectories: FastifyPluginAsyncTypebox = async (fastify) => {
  const { scimDirectories: service } = fastify.services

  fastify.post('/:id/scim-directories', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.create',
      summary: 'Make the organization\'s SCIM directory: its base URL and bearer token (shown once) go to the identity provider',
      params: IdParamsSchema,
      body: ScimDirectoryCreateSchema,
      response: {
        201: described(ScimDirectoryWithTokenResponseSchema, 'Created: the directory and its token', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const directory = await service.create(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).header('location', `/api/v1/organizations/${request.params.id}/scim-directories/${directory.id}`)
      .send({ data: directory })
  })

  fastify.get('/:id/scim-directories', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.list',
      summary: 'The organization\'s SCIM directories (at most one: one list)',
      params: IdParamsSchema,
      response: { 200: described(ScimDirectoryListResponseSchema, 'The directories'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.list(request.serviceContext, request.params.id) }))

  fastify.get('/:id/scim-directories/:directoryId', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.get',
      summary: 'A SCIM directory (never its token)',
      params: ScimDirectoryParamsSchema,
      response: { 200: described(ScimDirectoryResponseSchema, 'The directory'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.get(request.serviceContext, request.params.id, request.params.directoryId)
  }))

  fastify.patch('/:id/scim-directories/:directoryId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.update',
      summary: 'Rename a directory or change how its groups map to roles',
      params: ScimDirectoryParamsSchema,
      body: ScimDirectoryUpdateSchema,
      response: { 200: described(ScimDirectoryResponseSchema, 'Updated: the directory'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.update(request.serviceContext, request.params.id, request.params.directoryId, request.body)
  }))

  fastify.post('/:id/scim-directories/:directoryId/token', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.rotateToken',
      summary: 'Replace the directory\'s bearer token: the old one stops working at once',
      params: ScimDirectoryParamsSchema,
      response: {
        200: described(ScimDirectoryWithTokenResponseSchema, 'The directory and its new token (shown once)'),
        ...errorResponses({ body: true }, 401, 403, 404)
      }
    }
  }, async (request) => ({
    data: await service.rotateToken(request.serviceContext, request.params.id, request.params.directoryId)
  }))

  fastify.delete('/:id/scim-directories/:directoryId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.scimDirectories.delete',
      summary: 'Remove a directory: provisioning stops; the accounts it made and their memberships stay',
      params: ScimDirectoryParamsSchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id, request.params.directoryId)
    return await reply.code(204).send()
  })
}

export default scimDirectories
