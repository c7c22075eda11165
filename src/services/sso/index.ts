export { mappedRole } from './assertion-profile.js'
import type { ServiceDependencies } from '../dependencies.js'
import type { SessionService } from '../sessions/index.js'
import type { FederatedSignInService, SignInService } from '../sign-in/index.js'
import { isLoopbackUrl } from '../../federation/saml-metadata.js'
import { outboundPolicy } from '../../security/outbound-addresses.js'
import { SsoConnectionService } from './connections.js'
import { IdpMetadataRefresh, IdpMetadataSource } from './idp-metadata.js'
import { SsoDiscoveryService } from './discovery.js'
import { SamlSignInService } from './saml-sign-in.js'

/** Enterprise sign-in: organizations' own identity providers, discovery by verified domain, and the SAML flow. */
export function ssoServices (
  { config, repositories, audit, singleUse, now, resolve }: ServiceDependencies,
  { federation, signIn, sessions }: {
    federation: FederatedSignInService, signIn: SignInService, sessions: SessionService
  }
) {
  const { ssoConnections, organizations, organizationDomains, scimResources, users } = repositories
  // An IdP's metadata URL is entered by an organization's owner: fetched under the outbound rule
  // of webhook endpoints, with networks of its own (public addresses only unless the operator says).
  const metadataSource = new IdpMetadataSource({
    policy: outboundPolicy(config.ssoMetadataAllowedNetworks, 'SSO_METADATA_ALLOWED_NETWORKS'),
    loopbackHttp: isLoopbackUrl(config.publicUrl),
    resolve
  })
  const connections = new SsoConnectionService({
    ssoConnections, audit, federation, metadataSource, publicUrl: config.publicUrl, now
  })
  return {
    ssoConnections: connections,
    ssoMetadataRefresh: new IdpMetadataRefresh({ ssoConnections, source: metadataSource, audit, now: now ?? Date.now }),
    ssoDiscovery: new SsoDiscoveryService({ organizations, organizationDomains, ssoConnections, connections }),
    samlSignIn: new SamlSignInService({
      ssoConnections,
      users,
      organizations,
      organizationDomains,
      scimResources,
      states: singleUse.oauthStates,
      assertionIds: singleUse.assertionIds,
      federation,
      signIn,
      sessions,
      audit,
      publicUrl: config.publicUrl,
      now
    })
  }
}
