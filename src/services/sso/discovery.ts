import type { SsoDiscovery, SsoDiscoveryBody } from '../../../schemas/sso.js'
import { Errors, validationFailed } from '../../errors.js'
import { emailDomain, type OrganizationDomainsRepository } from '../../store/organization-domains.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { SsoConnectionsRepository } from '../../store/sso-connections.js'
import type { SsoConnectionService } from './connections.js'

export interface SsoDiscoveryDependencies {
  organizations: OrganizationsRepository
  organizationDomains: OrganizationDomainsRepository
  ssoConnections: SsoConnectionsRepository
  connections: SsoConnectionService
}

/**
 * Home-realm discovery (docs/api.md, "Enterprise sign-in"): an address routes to the
 * organization holding its domain verified (a claim alone routes nothing), a slug to its
 * organization; the answer is where to sign in. Both tell only what a sign-in page shows anyway:
 * which organizations sign in through their own identity provider.
 */
export class SsoDiscoveryService {
  constructor (private readonly deps: SsoDiscoveryDependencies) {}

  async discover ({ email, organization: slug }: SsoDiscoveryBody): Promise<SsoDiscovery> {
    if ((email === undefined) === (slug === undefined)) {
      throw validationFailed([{ path: '/email', message: 'give an e-mail address or an organization\'s slug, one of them' }])
    }
    const { organizations, organizationDomains, ssoConnections, connections } = this.deps
    const organizationId = email !== undefined
      ? await organizationDomains.verifiedHolderOf(emailDomain(email))
      : (await organizations.findBySlug(slug?.toLowerCase() ?? ''))?.id
    const organization = organizationId === undefined ? undefined : await organizations.find(organizationId, '')
    const enabled = organization === undefined
      ? []
      : (await ssoConnections.listOf(organization.id)).filter((connection) => connection.enabled)
    if (organization === undefined || enabled.length === 0) throw new Errors.NOT_FOUND('SSO connection')
    return {
      organization: { id: organization.id, name: organization.name, slug: organization.slug },
      connections: enabled.map((connection) => {
        const { id, name, kind, sign_in_url: signInUrl } = connections.view(connection)
        return { id, name, kind, sign_in_url: signInUrl }
      })
    }
  }
}
