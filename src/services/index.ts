import type { CursorCodec } from '../collection/cursor.js'
import type { Config } from '../config.js'
import type { OAuthStateStore } from '../oauth/state-store.js'
import type { PasswordHasher } from '../security/passwords.js'
import type { TokenService } from '../security/tokens.js'
import { trustedNetworks } from '../security/zero-trust.js'
import type { Repositories } from '../store/repositories.js'
import { AccessService } from './access.js'
import { AccountService } from './accounts.js'
import { RecentSecurityEventsDetector } from './anomalies.js'
import { AuditLogService } from './audit-log.js'
import type { AuditTrail } from './audit-trail.js'
import { DeviceService } from './devices.js'
import type { MessageSender } from './message-sender.js'
import { MfaSettingsService } from './mfa-settings.js'
import { MfaService } from './mfa.js'
import { OAuthService } from './oauth.js'
import { PostService } from './posts.js'
import { RoleService } from './roles.js'
import { SessionService } from './sessions.js'
import { SignInGuard } from './sign-in-guard.js'
import { SignInService } from './sign-in.js'

export interface ServiceDependencies {
  config: Config
  repositories: Repositories
  cursors: CursorCodec
  passwords: PasswordHasher
  tokens: TokenService
  audit: AuditTrail
  /** Revokes an access token on every instance until it expires. */
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  oauthStates: OAuthStateStore
  messages: MessageSender
  /** Where a service reports what it could not do without failing the request (a notice not sent). */
  warn: (entry: Record<string, unknown>, message: string) => void
}

export type Services = ReturnType<typeof createServices>

/** Every flow of the service, wired to its repositories: what route handlers call, and what tests call directly. */
export function createServices (deps: ServiceDependencies) {
  const { config, repositories, cursors, passwords, tokens, audit } = deps
  const { users } = repositories
  const sessions = new SessionService({ tokens, sessions: repositories.sessions, users, revokeAccessToken: deps.revokeAccessToken, policy: config.session, cursors })
  const signInGuard = new SignInGuard(repositories.signInFailures, audit)
  const mfa = new MfaService({ mfa: repositories.mfa, secret: config.jwtSecret, issuer: config.mfa.issuer })
  const oauth = new OAuthService({ providers: config.oauth, states: deps.oauthStates, users, identities: repositories.identities })
  return {
    sessions,
    signInGuard,
    mfa,
    oauth,
    signIn: new SignInService({ users, revocations: repositories.revocations, passwords, tokens, guard: signInGuard, sessions, mfa, oauth, audit }),
    accounts: new AccountService({ users, passwords, passwordPolicy: config.passwordPolicy, guard: signInGuard, sessions, audit, cursors }),
    mfaSettings: new MfaSettingsService({ mfa, guard: signInGuard, users, messages: deps.messages, audit, warn: deps.warn }),
    roles: new RoleService({ users, audit }),
    devices: new DeviceService({ devices: repositories.devices, users, audit, cursors }),
    posts: new PostService({ posts: repositories.posts, comments: repositories.comments, users, cursors }),
    access: new AccessService({
      devices: repositories.devices,
      detector: new RecentSecurityEventsDetector(repositories.signInFailures, repositories.sessions),
      trustedNetworks: trustedNetworks(config.trustedNetworks),
      audit
    }),
    auditLog: new AuditLogService({ auditLogs: repositories.auditLogs, cursors })
  }
}
