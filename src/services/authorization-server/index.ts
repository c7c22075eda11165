import { SEALED_PURPOSES, SecretBox } from '../../security/secret-box.js'
import type { ServiceDependencies } from '../dependencies.js'
import { AuthorizationGrantService } from './authorization-grants.js'
import { IdTokenKeyService } from './id-token-keys.js'
import { OAuthClientService } from './oauth-clients.js'

/**
 * What the authorization server keeps: its clients, the grants people gave them, the keys its ID
 * tokens are signed with.
 */
export function authorizationServerServices ({ config, repositories, audit, cursors, log, now }: ServiceDependencies) {
  return {
    authorizationGrants: new AuthorizationGrantService({
      artifacts: repositories.authorizationArtifacts,
      clients: repositories.oauthClients,
      organizations: repositories.organizations,
      audit,
      now
    }),
    oauthClients: new OAuthClientService({
      clients: repositories.oauthClients, audit, cursors, customScopes: config.authorizationServerScopes, now
    }),
    idTokenKeys: new IdTokenKeyService({
      keys: repositories.authorizationServerKeys,
      box: new SecretBox(config.sealing.keys, SEALED_PURPOSES.idTokenKey),
      persistent: !config.sealing.drawnAtStart,
      warn: (entry, message) => { log.warn(entry, message) },
      now
    })
  }
}
