import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { ReauthenticationService } from '../sign-in/index.js'
import { ApiKeyService } from './api-keys.js'

export { MAX_API_KEYS } from './api-keys.js'

/** API keys of people and organizations (docs/api.md, "API keys"). */
export function apiKeyServices (
  { repositories, audit, revokeAccessToken, now }: ServiceDependencies,
  { reauthentication, messaging }: { reauthentication: ReauthenticationService, messaging: Messaging }
) {
  const { apiKeys, users, organizations } = repositories
  return {
    apiKeys: new ApiKeyService({
      apiKeys, users, organizations, reauthentication, audit, notices: messaging.notices, revokeAccessToken, now
    })
  }
}
