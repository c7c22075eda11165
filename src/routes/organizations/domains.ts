import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CollectionQuerySchema } from '../../../schemas/collection.js'
import { described, IdParamsSchema, LOCATION } from '../../../schemas/common.js'
import {
  DOMAIN_FIELDS, DomainClaimSchema, DomainParamsSchema, DomainUpdateSchema, DomainVerificationSchema,
  OrganizationDomainCollectionSchema,
  OrganizationDomainResponseSchema
} from '../../../schemas/domains.js'
import { errorResponses } from '../../../schemas/errors.js'

/** An organization's e-mail domains (docs/api.md, "Verified domains"): claimed, proved by DNS, withdrawn. */
const domains: FastifyPluginAsyncTypebox = async (fastify) => {
  const { domains: service } = fastify.services

  fastify.post('/:id/domains', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.create',
      summary: 'Claim an e-mail domain: the answer names the TXT record that proves it',
      params: IdParamsSchema,
      body: DomainClaimSchema,
      response: {
        201: described(OrganizationDomainResponseSchema, 'Claimed, not yet verified', LOCATION),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    }
  }, async (request, reply) => {
    const domain = await service.claim(request.serviceContext, request.params.id, request.body)
    return await reply.code(201).header('location', `/api/v1/organizations/${request.params.id}/domains/${domain.id}`).send({ data: domain })
  })

  fastify.get('/:id/domains', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.list',
      summary: 'An organization\'s claimed domains, verified or not',
      params: IdParamsSchema,
      querystring: CollectionQuerySchema(DOMAIN_FIELDS),
      response: { 200: described(OrganizationDomainCollectionSchema, 'A page of domains'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => await service.list(request.serviceContext, request.params.id, request.query))

  fastify.get('/:id/domains/:domainId', {
    config: { access: { organization: 'id', permission: 'org:read' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.get',
      summary: 'A claimed domain',
      params: DomainParamsSchema,
      response: { 200: described(OrganizationDomainResponseSchema, 'The domain'), ...errorResponses({}, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.get(request.serviceContext, request.params.id, request.params.domainId)
  }))

  fastify.post('/:id/domains/:domainId/verify', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.verify',
      summary: 'Verify a claimed domain: its TXT record is looked up now (or a super_admin vouches for it)',
      params: DomainParamsSchema,
      body: DomainVerificationSchema,
      response: {
        200: described(OrganizationDomainResponseSchema, 'Verified: the domain'),
        ...errorResponses({ body: true }, 401, 403, 404, 409)
      }
    },
    // The body is optional: a bare POST verifies by DNS.
    preValidation: async (request) => { request.body ??= {} }
  }, async (request) => ({
    data: await service.verify(request.serviceContext, request.params.id, request.params.domainId, request.body.method ?? 'dns')
  }))

  fastify.patch('/:id/domains/:domainId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.update',
      summary: 'Require SSO of the domain\'s addresses (no password sign-in while it is verified and a connection is enabled), or no longer',
      params: DomainParamsSchema,
      body: DomainUpdateSchema,
      response: { 200: described(OrganizationDomainResponseSchema, 'Updated: the domain'), ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request) => ({
    data: await service.update(request.serviceContext, request.params.id, request.params.domainId, request.body)
  }))

  fastify.delete('/:id/domains/:domainId', {
    config: { access: { organization: 'id', permission: 'sso:manage' } },
    schema: {
      tags: ['organizations'],
      operationId: 'organizations.domains.delete',
      summary: 'Withdraw a domain\'s claim, verified or not: its addresses no longer route to the organization',
      params: DomainParamsSchema,
      response: { 204: { type: 'null', description: 'Withdrawn' }, ...errorResponses({ body: true }, 401, 403, 404) }
    }
  }, async (request, reply) => {
    await service.remove(request.serviceContext, request.params.id, request.params.domainId)
    return await reply.code(204).send()
  })
}

export default domains
