import { SEALED_PURPOSES, SecretBox } from '../../security/secret-box.js'
import type { ServiceDependencies } from '../dependencies.js'
import { SessionService } from './sessions.js'

export type { OrganizationSelection, SessionService } from './sessions.js'

/** Sessions: their refresh tokens, rotation, listing and ending. */
export function sessionServices ({ config, repositories, tokens, cursors, revokeAccessToken }: ServiceDependencies) {
  return {
    sessions: new SessionService({
      tokens,
      sessions: repositories.sessions,
      impersonations: repositories.impersonations,
      authorizationArtifacts: repositories.authorizationArtifacts,
      apiKeys: repositories.apiKeys,
      revokeAccessToken,
      policy: config.session,
      cursors,
      retryBox: new SecretBox(config.sealing.keys, SEALED_PURPOSES.refreshRetry),
      organizationRoleFor: async (organizationId, userId, trx) =>
        await repositories.organizations.roleForRotation(organizationId, userId, trx)
    })
  }
}
