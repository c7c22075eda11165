import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import { InvitationService } from './invitations.js'
import { OrganizationService } from './organizations.js'

/** Organizations, their members and roles, and invitations into them. */
export function organizationServices (
  { repositories, audit, cursors, now }: ServiceDependencies,
  { sessions, messaging }: { sessions: SessionService, messaging: Messaging }
) {
  const { users, organizations, invitations } = repositories
  return {
    organizations: new OrganizationService({
      organizations, users, sessions, notices: messaging.notices, audit, cursors, now
    }),
    invitations: new InvitationService({
      organizations, invitations, users, templates: messaging.templates, audit, cursors, deliver: messaging.deliver, now
    })
  }
}
