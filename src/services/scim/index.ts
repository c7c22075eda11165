import type { ServiceDependencies } from '../dependencies.js'
import type { SessionService } from '../sessions/index.js'
import type { AccountClaims } from '../sign-in/index.js'
import { ScimDirectoryService } from './directories.js'
import { ScimGroupService } from './groups.js'
import { ScimMemberships } from './memberships.js'
import { ScimUserService } from './users.js'

/** SCIM 2.0: organizations' directories, and the people and groups they provision. */
export function scimServices (
  { config, repositories, audit, now }: ServiceDependencies,
  { claims, sessions }: { claims: AccountClaims, sessions: SessionService }
) {
  const { scimDirectories, scimResources, users, organizations, organizationDomains } = repositories
  const { publicUrl } = config
  const memberships = new ScimMemberships({ organizations, scimResources, sessions, now })
  return {
    scimDirectories: new ScimDirectoryService({ scimDirectories, audit, publicUrl, now }),
    scimUsers: new ScimUserService({
      scimResources, users, organizationDomains, claims, memberships, audit, publicUrl, now
    }),
    scimGroups: new ScimGroupService({ scimResources, memberships, audit, publicUrl, now })
  }
}
