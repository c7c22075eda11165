import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import { DomainService } from './domains.js'
import { InvitationService } from './invitations.js'
import { OrganizationService } from './organizations.js'
import { systemTxtResolver } from './txt-records.js'

export { actingRoleIn } from './standing.js'

/** Organizations, their members and roles, invitations into them, and the e-mail domains they verify. */
export function organizationServices (
  { repositories, audit, cursors, now, resolveTxt, revokeAccessToken }: ServiceDependencies,
  { sessions, messaging }: { sessions: SessionService, messaging: Messaging }
) {
  const { users, organizations, invitations, organizationDomains, scimResources } = repositories
  return {
    organizations: new OrganizationService({
      organizations,
      users,
      sessions,
      notices: messaging.notices,
      audit,
      cursors,
      apiKeys: repositories.apiKeys,
      revokeAccessToken,
      now
    }),
    invitations: new InvitationService({
      organizations,
      invitations,
      users,
      scimResources,
      templates: messaging.templates,
      audit,
      cursors,
      deliver: messaging.deliver,
      now
    }),
    domains: new DomainService({
      organizationDomains, audit, cursors, resolveTxt: resolveTxt ?? systemTxtResolver(), now
    })
  }
}
