import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import type { ReauthenticationService } from '../sign-in/index.js'
import { AccountDeletionService } from './account-deletion.js'
import { AccountSupportService } from './account-support.js'
import { AccountExportService } from './account-export.js'
import { ImpersonationService } from './impersonations.js'
import { SuspensionService } from './suspensions.js'

/**
 * An account's life beyond its profile: suspension, support (its sign-in and sessions seen, ended,
 * reset), impersonation by support, deletion, export of its data.
 */
export function accountLifecycleServices (
  deps: ServiceDependencies,
  { sessions, messaging, reauthentication }: {
    sessions: SessionService
    messaging: Messaging
    reauthentication: ReauthenticationService
  }
) {
  const { config, repositories, tokens, audit, now } = deps
  const { users } = repositories
  const { notices } = messaging
  return {
    suspensions: new SuspensionService({ users, sessions, audit, now }),
    accountSupport: new AccountSupportService({
      users, mfa: repositories.mfa, identities: repositories.identities, sessions, reauthentication, audit, notices
    }),
    impersonations: new ImpersonationService({
      users, impersonations: repositories.impersonations, sessions, tokens, audit, notices, now
    }),
    accountExport: new AccountExportService({
      users,
      sessions: repositories.sessions,
      devices: repositories.devices,
      identities: repositories.identities,
      passkeys: repositories.passkeys,
      organizations: repositories.organizations,
      posts: repositories.posts,
      comments: repositories.comments,
      auditLogs: repositories.auditLogs,
      audit,
      now
    }),
    accountDeletion: new AccountDeletionService({
      users,
      erasure: repositories.accountErasure,
      sessions,
      reauthentication,
      audit,
      notices,
      graceDays: config.accountDeletionGraceDays,
      now
    })
  }
}
