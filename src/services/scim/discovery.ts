import { SCIM, SCIM_MAX_COUNT } from '../../../schemas/scim.js'
import { listResponse } from './resources.js'

/**
 * What the service's SCIM endpoint supports (RFC 7644 §4), as identity providers read it
 * before provisioning: PATCH and filters yes; bulk, sorting, ETags and password changes no.
 */
export function serviceProviderConfig (base: string) {
  return {
    schemas: [SCIM.serviceProviderConfig],
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: SCIM_MAX_COUNT },
    changePassword: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    authenticationSchemes: [{
      type: 'oauthbearertoken', name: 'Bearer token', description: 'The directory\'s token, shown once when it was made or rotated', primary: true
    }],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` }
  }
}

const list = (resources: object[]) => listResponse(resources.length, 1, resources)

export function resourceTypes (base: string) {
  return list([
    {
      schemas: [SCIM.resourceType],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      schema: SCIM.user,
      schemaExtensions: [{ schema: SCIM.enterpriseUser, required: false }],
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` }
    },
    {
      schemas: [SCIM.resourceType],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      schema: SCIM.group,
      meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` }
    }
  ])
}

const attribute = (name: string, type: string, more: object = {}) => ({
  name, type, multiValued: false, required: false, caseExact: false, mutability: 'readWrite', returned: 'default', uniqueness: 'none', ...more
})

/** The attributes the service reads; any other a directory writes is kept and answered back as written. */
export function schemas (base: string) {
  return list([
    {
      schemas: [SCIM.schema],
      id: SCIM.user,
      name: 'User',
      description: 'A person of the organization: an account and its membership',
      attributes: [
        attribute('userName', 'string', { required: true, uniqueness: 'server' }),
        attribute('externalId', 'string', { caseExact: true }),
        attribute('active', 'boolean'),
        attribute('displayName', 'string'),
        attribute('name', 'complex', {
          subAttributes: [attribute('formatted', 'string'), attribute('givenName', 'string'), attribute('familyName', 'string')]
        }),
        attribute('emails', 'complex', {
          multiValued: true,
          subAttributes: [attribute('value', 'string'), attribute('type', 'string'), attribute('primary', 'boolean')]
        })
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCIM.user}` }
    },
    {
      schemas: [SCIM.schema],
      id: SCIM.group,
      name: 'Group',
      description: 'A group of the directory: its display name maps to an organization role',
      attributes: [
        attribute('displayName', 'string', { required: true }),
        attribute('externalId', 'string', { caseExact: true }),
        attribute('members', 'complex', {
          multiValued: true,
          subAttributes: [attribute('value', 'string', { caseExact: true }), attribute('display', 'string', { mutability: 'readOnly' })]
        })
      ],
      meta: { resourceType: 'Schema', location: `${base}/Schemas/${SCIM.group}` }
    }
  ])
}
