import type { CursorCodec } from '../collection/cursor.js'
import { INTERACTION_PATH } from '../authorization-server/paths.js'
import { authorizationServerIssuer, type Config } from '../config/index.js'
import type { PasswordHasher } from '../security/passwords.js'
import { outboundPolicy } from '../security/outbound-addresses.js'
import { SEALED_PURPOSES, SecretBox } from '../security/secret-box.js'
import type { TokenService } from '../security/tokens.js'
import { trustedNetworks } from '../security/zero-trust.js'
import type { Repositories } from '../store/repositories.js'
import type { SingleUseStores } from '../store/single-use.js'
import { AccessService } from './access.js'
import { AccountClaims } from './account-claims.js'
import { AccountDeletionService } from './account-deletion.js'
import { AccountExportService } from './account-export.js'
import { AccountService } from './accounts.js'
import { RecentSecurityEventsDetector } from './audit/anomalies.js'
import { AuditLogService } from './audit/log.js'
import { AuthorizationGrantService } from './authorization-grants.js'
import { BreachedPasswords } from './breached-passwords.js'
import type { AuditTrail } from './audit/trail.js'
import { DeviceService } from './devices.js'
import { IdTokenKeyService } from './id-token-keys.js'
import type { DeliveryLog, Mailer, SmsSender } from './messaging/ports.js'
import { EmailVerificationService } from './email-verification.js'
import { MessageCodes } from './messaging/codes.js'
import { MessageTemplates } from './messaging/templates.js'
import { MfaSettingsService } from './mfa-settings.js'
import { MfaService } from './mfa.js'
import { Notices } from './messaging/notices.js'
import { ImpersonationService } from './impersonations.js'
import { InvitationService } from './invitations.js'
import { OAuthService } from './oauth.js'
import { OAuthClientService } from './oauth-clients.js'
import { OrganizationService } from './organizations.js'
import { PasskeyService } from './passkeys.js'
import { MessageOutbox } from './messaging/outbox.js'
import { PasswordResetService } from './password-reset.js'
import { PostService } from './posts.js'
import { ReauthenticationService } from './reauthentication.js'
import { RoleService } from './roles.js'
import { SessionService } from './sessions.js'
import { SignInGuard } from './sign-in-guard.js'
import { SignInService } from './sign-in.js'
import { SuspensionService } from './suspensions.js'
import { WebhookDispatcher } from './webhooks/dispatcher.js'
import { type Resolver, WebhookHttpSender } from './webhooks/http-sender.js'
import { WebhookService } from './webhooks/service.js'

export interface ServiceDependencies {
  config: Config
  repositories: Repositories
  cursors: CursorCodec
  passwords: PasswordHasher
  tokens: TokenService
  audit: AuditTrail
  /** Revokes an access token on every instance until it expires. */
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  singleUse: SingleUseStores
  mailer: Mailer
  sms: SmsSender
  /** Where message delivery reports what happened. */
  log: DeliveryLog
  /**
   * The clock one-time tokens and message codes are issued and checked by, and webhook
   * deliveries scheduled by (Date.now by default).
   */
  now?: () => number
  /** How webhook endpoints' host names are resolved (the system's resolver by default). */
  resolve?: Resolver
}

export type Services = ReturnType<typeof createServices>

/** Every flow of the service, wired to its repositories: what route handlers call, and what tests call directly. */
export function createServices (deps: ServiceDependencies) {
  const { config, repositories, cursors, passwords, tokens, audit } = deps
  const { users } = repositories
  const sessions = new SessionService({
    tokens,
    sessions: repositories.sessions,
    impersonations: repositories.impersonations,
    authorizationArtifacts: repositories.authorizationArtifacts,
    revokeAccessToken: deps.revokeAccessToken,
    policy: config.session,
    cursors,
    retryBox: new SecretBox(config.sealing.keys, SEALED_PURPOSES.refreshRetry),
    organizationRoleOf: async (organizationId, userId) =>
      await repositories.organizations.roleOf(organizationId, userId)
  })
  const signInGuard = new SignInGuard(repositories.signInFailures, audit)
  const mfa = new MfaService({
    mfa: repositories.mfa, secret: config.jwtSecret, sealingKeys: config.sealing.keys, issuer: config.mfa.issuer
  })
  const outbox = new MessageOutbox({
    outbox: repositories.outbox, mailer: deps.mailer, sms: deps.sms, retryMs: config.messages.retryMs, log: deps.log
  })
  const deliver = () => { outbox.kick() }
  const templates = new MessageTemplates({ appUrl: config.messages.appUrl, productName: config.mfa.issuer })
  const notices = new Notices({ outbox: repositories.outbox, templates, deliver })
  const claims = new AccountClaims({ users, sessions, notices })
  const messageCodes = new MessageCodes(repositories.mfa, config.jwtSecret, deps.now)
  const reauthentication = new ReauthenticationService({
    users,
    sessions: repositories.sessions,
    passwords,
    guard: signInGuard,
    mfa,
    messageCodes,
    // A passkey's assertion is one proof; the passkey service in turn asks this one for proofs of its changes.
    verifyPasskey: async (context, body): Promise<{ userId: string }> => await passkeys.verifyAssertion(context, body),
    outbox: repositories.outbox,
    templates,
    deliver,
    audit,
    mfaRequiredRoles: config.mfa.requiredRoles,
    now: deps.now
  })
  const passkeys: PasskeyService = new PasskeyService({
    passkeys: repositories.passkeys,
    users,
    challenges: deps.singleUse.passkeyChallenges,
    relyingParty: config.webauthn,
    cursors,
    notices,
    audit,
    reauthentication
  })
  const issuer = authorizationServerIssuer(config)
  const oauth = new OAuthService({
    providers: config.oauth,
    // The authorization server's sign-in page starts providers' sign-ins as a browser application does.
    redirectUrls: issuer === null ? config.oauthRedirectUrls : [...config.oauthRedirectUrls ?? [], `${issuer}${INTERACTION_PATH}`],
    states: deps.singleUse.oauthStates,
    exchanges: deps.singleUse.oauthExchanges,
    users,
    identities: repositories.identities,
    claims,
    notices,
    reauthentication,
    audit
  })
  const suspensions = new SuspensionService({ users, sessions, audit, now: deps.now })
  const accountExport = new AccountExportService({
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
    now: deps.now
  })
  const breachedPasswords = new BreachedPasswords({ ...config.passwordBreachCheck, audit, log: deps.log })
  const webhookSecrets = new SecretBox(config.sealing.keys, SEALED_PURPOSES.webhookSecret)
  const webhookPolicy = outboundPolicy(config.webhooks.allowedNetworks)
  const webhookDispatcher = new WebhookDispatcher({
    webhooks: repositories.webhooks,
    sender: new WebhookHttpSender({
      policy: webhookPolicy, timeoutMs: config.webhooks.timeoutMs, resolve: deps.resolve
    }),
    secrets: webhookSecrets,
    users,
    notices,
    audit,
    log: deps.log,
    now: deps.now
  })
  const emailVerification = new EmailVerificationService({
    users,
    tokens: repositories.oneTimeTokens,
    templates,
    audit,
    claims,
    mode: config.messages.emailVerification,
    deliver,
    now: deps.now
  })
  return {
    sessions,
    reauthentication,
    signInGuard,
    mfa,
    oauth,
    outbox,
    webhookDispatcher,
    emailVerification,
    passkeys,
    passwordReset: new PasswordResetService({
      users,
      tokens: repositories.oneTimeTokens,
      passwords,
      passwordPolicy: config.passwordPolicy,
      breachedPasswords,
      sessions,
      claims,
      templates,
      notices,
      audit,
      deliver,
      now: deps.now
    }),
    suspensions,
    impersonations: new ImpersonationService({
      users, impersonations: repositories.impersonations, tokens, audit, notices, now: deps.now
    }),
    accountExport,
    signIn: new SignInService({
      users,
      suspensions,
      revocations: repositories.revocations,
      passwords,
      tokens,
      guard: signInGuard,
      sessions,
      mfa,
      oauth,
      passkeys,
      audit,
      messageCodes,
      outbox: repositories.outbox,
      templates,
      deliver,
      requireVerifiedEmail: config.messages.emailVerification === 'required',
      mfaRequiredRoles: config.mfa.requiredRoles
    }),
    accounts: new AccountService({
      users,
      passwords,
      passwordPolicy: config.passwordPolicy,
      breachedPasswords,
      sessions,
      claims,
      reauthentication,
      audit,
      cursors,
      verification: emailVerification,
      notices,
      erasure: repositories.accountErasure
    }),
    accountDeletion: new AccountDeletionService({
      users,
      erasure: repositories.accountErasure,
      sessions,
      reauthentication,
      audit,
      notices,
      graceDays: config.accountDeletionGraceDays,
      now: deps.now
    }),
    mfaSettings: new MfaSettingsService({ mfa, guard: signInGuard, users, reauthentication, notices, audit }),
    roles: new RoleService({ users, audit }),
    devices: new DeviceService({ devices: repositories.devices, users, audit, cursors }),
    posts: new PostService({ posts: repositories.posts, comments: repositories.comments, users, cursors }),
    access: new AccessService({
      devices: repositories.devices,
      detector: new RecentSecurityEventsDetector(repositories.signInFailures, repositories.sessions),
      trustedNetworks: trustedNetworks(config.trustedNetworks),
      audit
    }),
    auditLog: new AuditLogService({ auditLogs: repositories.auditLogs, cursors }),
    authorizationGrants: new AuthorizationGrantService({
      artifacts: repositories.authorizationArtifacts,
      clients: repositories.oauthClients,
      organizations: repositories.organizations,
      audit,
      now: deps.now
    }),
    organizations: new OrganizationService({
      organizations: repositories.organizations, users, sessions, notices, audit, cursors, now: deps.now
    }),
    invitations: new InvitationService({
      organizations: repositories.organizations, users, templates, audit, cursors, deliver, now: deps.now
    }),
    webhooks: new WebhookService({
      webhooks: repositories.webhooks,
      users,
      secrets: webhookSecrets,
      policy: webhookPolicy,
      audit,
      cursors,
      deliver: () => { webhookDispatcher.kick() },
      now: deps.now
    }),
    oauthClients: new OAuthClientService({
      clients: repositories.oauthClients, audit, cursors, customScopes: config.authorizationServerScopes, now: deps.now
    }),
    idTokenKeys: new IdTokenKeyService({
      keys: repositories.authorizationServerKeys,
      box: new SecretBox(config.sealing.keys, SEALED_PURPOSES.idTokenKey),
      persistent: !config.sealing.drawnAtStart,
      warn: (entry, message) => { deps.log.warn(entry, message) },
      now: deps.now
    })
  }
}
