import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  ORGANIZATION_FIELDS, OrganizationCollectionSchema, OrganizationCreateSchema, OrganizationResponseSchema,
  OrganizationUpdateSchema
} from '../../../schemas/organizations.js'
import apiKeys from './api-keys.js'
import domains from './domains.js'
import invitations from './invitations.js'
import scimDirectories from './scim-directories.js'
import ssoConnections from './sso-connections.js'
import members from './members.js'

/** Organizations (docs/api.md, "Organizations"). */
const organizations: FastifyPluginAsyncTypebox = async (fastify) => {
  const { organizations: service } = fastify.services
  await fastify.register(members)
  await fastify.register(invitations)
  await fastify.register(domains)
  await fastify.register(ssoConnections)
  await fastify.register(scimDirectories)
  await fastify.register(apiKeys)

  fastify.post('', {
    config: { access: 'bearer' },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.create',
      summary: 'Create an organization: the caller becomes its owner (the caller\'s address must have been verified)',
      body: OrganizationCreateSchema,
      response: {
        201: described(OrganizationResponseSchema, 'Created: the organization', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 409)
      }
    }
  }, async (request, reply) => {
    const organization = await service.create(request.serviceContext, request.body)
    return await reply.code(201).header('location', `/api/v1/organizations/${organization.id}`).send({ data: organization })
  })

  fastify.get('', {
    config: { access: 'bearer' },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.list',
      summary: 'The caller\'s organizations (every organization for a global administrator)',
      querystring: CollectionQuerySchema(ORGANIZATION_FIELDS),
      response: { 200: described(OrganizationCollectionSchema, 'A page of organizations'), ...errorResponses({}, 401) }
    }
  }, async (request) => await service.list(request.serviceContext, request.query))

  fastify.get('/:id', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.get',
      summary: 'An organization',
      params: IdParamsSchema,
      response: { 200: described(OrganizationResponseSchema, 'The organization'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.get(request.serviceContext, request.params.id) }))

  fastify.patch('/:id', {
    config: { access: { organization: 'id', permission: 'org:update' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.update',
      summary: 'Rename an organization or change its slug',
      params: IdParamsSchema,
      body: OrganizationUpdateSchema,
      response: { 200: described(OrganizationResponseSchema, 'Updated: the organization'), ...errorResponses({ body: true }, 401, 403, 404, 409) }
    }
  }, async (request) => ({ data: await service.update(request.serviceContext, request.params.id, request.body) }))

  fastify.delete('/:id', {
    config: { access: { organization: 'id', permission: 'org:delete' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.delete',
      summary: 'Delete an organization with its members and invitations (never its users)',
      params: IdParamsSchema,
      response: { 204: { type: 'null', description: 'Deleted' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id)
    return await reply.code(204).send()
  })
}

export default organizations
