import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import {
  SsoConnectionCreateSchema, SsoConnectionListResponseSchema, SsoConnectionParamsSchema, SsoConnectionResponseSchema,
  SsoConnectionUpdateSchema
} from '../../../schemas/sso.js'

/** An IdP's metadata (Entra ID's runs to tens of kilobytes) is more than the API's 10 KB bodies. */
const METADATA_BODY_LIMIT = 1024 * 1024

/** An organization's connections to its own identity providers (docs/api.md, "Enterprise sign-in"). */
const ssoConnections: FastifyPluginAsyncTypebox = async (fastify) => {
  const { ssoConnections: service } = fastify.services

  fastify.post('/:id/sso-connections', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    bodyLimit: METADATA_BODY_LIMIT,
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.ssoConnections.create',
      summary: 'Connect a SAML identity provider, by its metadata or its entity ID, SSO URL and certificates',
      params: IdParamsSchema,
      body: SsoConnectionCreateSchema,
      response: {
        201: described(SsoConnectionResponseSchema, 'Created: the connection, with the URLs to give the IdP', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const connection = await service.create(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).header('location', `/api/v1/organizations/${request.params.id}/sso-connections/${connection.id}`)
      .send({ data: connection })
  })

  fastify.get('/:id/sso-connections', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.ssoConnections.list',
      summary: 'An organization\'s SSO connections (at most 10: one list)',
      params: IdParamsSchema,
      response: { 200: described(SsoConnectionListResponseSchema, 'The connections, oldest first'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({ data: await service.list(request.serviceContext, request.params.id) }))

  fastify.get('/:id/sso-connections/:connectionId', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.ssoConnections.get',
      summary: 'An SSO connection',
      params: SsoConnectionParamsSchema,
      response: { 200: described(SsoConnectionResponseSchema, 'The connection'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.get(request.serviceContext, request.params.id, request.params.connectionId)
  }))

  fastify.patch('/:id/sso-connections/:connectionId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    bodyLimit: METADATA_BODY_LIMIT,
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.ssoConnections.update',
      summary: 'Change a connection: its name, IdP (new metadata or certificates), mapping, or turn it off',
      params: SsoConnectionParamsSchema,
      body: SsoConnectionUpdateSchema,
      response: { 200: described(SsoConnectionResponseSchema, 'Updated: the connection'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.update(request.serviceContext, request.params.id, request.params.connectionId, request.body)
  }))

  fastify.delete('/:id/sso-connections/:connectionId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.ssoConnections.delete',
      summary: 'Remove a connection: its sign-in stops; accounts it made and their memberships stay',
      params: SsoConnectionParamsSchema,
      response: { 204: { type: 'null', description: 'Removed' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id, request.params.connectionId)
    return await reply.code(204).send()
  })
}

export default ssoConnections
