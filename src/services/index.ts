import { accessServices } from './access/index.js'
import { accountLifecycleServices } from './account-lifecycle/index.js'
import { accountServices } from './accounts/index.js'
import { apiKeyServices } from './api-keys/index.js'
import { auditServices } from './audit/index.js'
import { authorizationServerServices } from './authorization-server/index.js'
import type { ServiceDependencies } from './dependencies.js'
import { messagingServices } from './messaging/index.js'
import { organizationServices } from './organizations/index.js'
import { overviewServices } from './overview/index.js'
import { postServices } from './posts/index.js'
import { sessionServices } from './sessions/index.js'
import { signInServices } from './sign-in/index.js'
import { scimServices } from './scim/index.js'
import { ssoServices } from './sso/index.js'
import { webhookServices } from './webhooks/index.js'

export type { ServiceDependencies } from './dependencies.js'

export type Services = ReturnType<typeof createServices>

/**
 * Every flow of the service, wired to its repositories: what route handlers call, and what tests
 * call directly. Each feature's index builds its services (docs/architecture.md), in the order
 * they build on one another.
 */
export function createServices (deps: ServiceDependencies) {
  const messaging = messagingServices(deps)
  const { sessions } = sessionServices(deps)
  const signIn = signInServices(deps, { sessions, messaging })
  const { claims, reauthentication } = signIn
  return {
    ...auditServices(deps),
    ...overviewServices(deps),
    outbox: messaging.outbox,
    sessions,
    ...signIn,
    ...accountServices(deps, { sessions, messaging, claims, reauthentication }),
    ...accountLifecycleServices(deps, { sessions, messaging, reauthentication }),
    ...organizationServices(deps, { sessions, messaging }),
    ...apiKeyServices(deps, { reauthentication, messaging }),
    ...ssoServices(deps, { federation: signIn.federation, signIn: signIn.signIn, sessions }),
    ...scimServices(deps, { claims, sessions }),
    ...webhookServices(deps, { messaging }),
    ...authorizationServerServices(deps),
    ...accessServices(deps),
    ...postServices(deps)
  }
}
