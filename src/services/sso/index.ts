export { mappedRole } from './assertion-profile.js'
import type { ServiceDependencies } from '../dependencies.js'
import type { SessionService } from '../sessions/index.js'
import type { FederatedSignInService, SignInService } from '../sign-in/index.js'
import { SsoConnectionService } from './connections.js'
import { SsoDiscoveryService } from './discovery.js'
import { SamlSignInService } from './saml-sign-in.js'

/** Enterprise sign-in: organizations' own identity providers, discovery by verified domain, and the SAML flow. */
export function ssoServices (
  { config, repositories, audit, singleUse, now }: ServiceDependencies,
  { federation, signIn, sessions }: {
    federation: FederatedSignInService, signIn: SignInService, sessions: SessionService
  }
) {
  const { ssoConnections, organizations, organizationDomains, scimResources, users } = repositories
  const connections = new SsoConnectionService({ ssoConnections, audit, federation, publicUrl: config.publicUrl, now })
  return {
    ssoConnections: connections,
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
