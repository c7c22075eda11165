export { mappedRole } from './assertion-profile.js'
import type { ServiceDependencies } from '../dependencies.js'
import type { SessionService } from '../sessions/index.js'
import type { FederatedSignInService, SignInService } from '../sign-in/index.js'
import { isLoopbackUrl } from '../../federation/saml-metadata.js'
import { outboundPolicy } from '../../security/outbound-addresses.js'
import { SEALED_PURPOSES, SecretBox } from '../../security/secret-box.js'
import { SsoConnectionService } from './connections.js'
import { IdpMetadataRefresh, IdpMetadataSource } from './idp-metadata.js'
import { SsoDiscoveryService } from './discovery.js'
import { OrganizationIssuers } from './oidc-issuers.js'
import { OidcSignInService } from './oidc-sign-in.js'
import { OrganizationSignIn } from './organization-sign-in.js'
import { SamlSignInService } from './saml-sign-in.js'

/**
 * Enterprise sign-in: organizations' own identity providers, discovery by verified domain, and
 * the SAML and OpenID flows.
 */
export function ssoServices (
  { config, repositories, audit, singleUse, now, resolve }: ServiceDependencies,
  { federation, signIn, sessions }: {
    federation: FederatedSignInService, signIn: SignInService, sessions: SessionService
  }
) {
  const { ssoConnections, organizations, organizationDomains, scimResources, users } = repositories
  // An IdP's metadata URL and an OpenID issuer are entered by an organization's owner: fetched
  // under the outbound rule of webhook endpoints, with networks of their own (public addresses
  // only unless the operator says).
  const policy = outboundPolicy(config.ssoMetadataAllowedNetworks, 'SSO_METADATA_ALLOWED_NETWORKS')
  const metadataSource = new IdpMetadataSource({ policy, loopbackHttp: isLoopbackUrl(config.publicUrl), resolve })
  const issuers = new OrganizationIssuers({ policy, resolve })
  const clientSecrets = new SecretBox(config.sealing.keys, SEALED_PURPOSES.ssoClientSecret)
  const connections = new SsoConnectionService({
    ssoConnections, audit, federation, metadataSource, issuers, clientSecrets, publicUrl: config.publicUrl, now
  })
  const organizationSignIn = new OrganizationSignIn({
    ssoConnections, users, organizations, organizationDomains, scimResources, federation, signIn, sessions, audit, now
  })
  return {
    ssoConnections: connections,
    ssoMetadataRefresh: new IdpMetadataRefresh({ ssoConnections, source: metadataSource, audit, now: now ?? Date.now }),
    ssoDiscovery: new SsoDiscoveryService({ organizations, organizationDomains, ssoConnections, connections }),
    samlSignIn: new SamlSignInService({
      ssoConnections,
      states: singleUse.oauthStates,
      assertionIds: singleUse.assertionIds,
      federation,
      organizationSignIn,
      publicUrl: config.publicUrl,
      now
    }),
    oidcSignIn: new OidcSignInService({
      states: singleUse.oauthStates, federation, organizationSignIn, issuers, clientSecrets, publicUrl: config.publicUrl
    })
  }
}
