import { INTERACTION_PATH } from '../../authorization-server/paths.js'
import { authorizationServerIssuer, type Config } from '../../config/index.js'
import { emailDomain } from '../../store/organization-domains.js'
import type { ServiceDependencies } from '../dependencies.js'
import type { Messaging } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import { AccountClaims } from './account-claims.js'
import { Admission } from './admission.js'
import { type EmailSignInDependencies, EmailSignInService } from './email-sign-in.js'
import { type FederatedSignInOptions, FederatedSignInService } from './federated-sign-in.js'
import { MfaSettingsService } from './mfa-settings.js'
import { MfaService } from './mfa.js'
import { PasskeyService } from './passkeys.js'
import { ReauthenticationService } from './reauthentication.js'
import { SignInGuard } from './sign-in-guard.js'
import { SignInService } from './sign-in.js'

export { type AccountClaims, claimedAccount } from './account-claims.js'
export type { InlineProof, ReauthenticationService } from './reauthentication.js'
export type { FederatedSignInService } from './federated-sign-in.js'
export type { SignInService } from './sign-in.js'
export { displayName, STATE_TTL_MS } from './federated-sign-in.js'

/**
 * Where a provider's sign-in may send the browser back: OAUTH_REDIRECT_URLS, and the
 * authorization server's sign-in page, which starts providers' sign-ins as a browser
 * application does.
 */
function federationRedirectUrls (config: Config): string[] | null {
  const issuer = authorizationServerIssuer(config)
  return issuer === null ? config.oauthRedirectUrls : [...config.oauthRedirectUrls ?? [], `${issuer}${INTERACTION_PATH}`]
}

/** Sign-in through providers, from the parts of sign-in it uses. */
function federatedSignIn (
  { config, repositories, audit, singleUse }: ServiceDependencies,
  parts: Pick<FederatedSignInOptions, 'claims' | 'notices' | 'reauthentication'>
): FederatedSignInService {
  return new FederatedSignInService({
    ...parts,
    providers: config.oauth,
    redirectUrls: federationRedirectUrls(config),
    states: singleUse.oauthStates,
    exchanges: singleUse.oauthExchanges,
    users: repositories.users,
    identities: repositories.identities,
    audit
  })
}

/** Sign-in by a code or link sent by e-mail, from the parts of sign-in it uses. */
function emailSignInService (
  { config, repositories, audit, now }: ServiceDependencies,
  parts: Pick<EmailSignInDependencies, 'claims' | 'guard' | 'templates' | 'federation' | 'ssoRequired' | 'deliver'>
): EmailSignInService {
  return new EmailSignInService({
    ...parts,
    emailSignIns: repositories.emailSignIns,
    users: repositories.users,
    audit,
    mode: config.messages.emailSignIn,
    appUrl: config.messages.appUrl,
    publicUrl: config.publicUrl,
    secret: config.jwtSecret,
    now
  })
}

/**
 * Signing in and what proves who one is: passwords (with the guard against guessing), second
 * factors and their settings, passkeys, federated sign-in at other providers, the step-up of
 * sensitive changes, and the claiming of an account by proving its address.
 */
export function signInServices (
  deps: ServiceDependencies,
  { sessions, messaging }: { sessions: SessionService, messaging: Messaging }
) {
  const { config, repositories, passwords, tokens, audit, now } = deps
  const { users } = repositories
  const { notices, templates, deliver, messageCodes } = messaging
  const signInGuard = new SignInGuard(repositories.signInFailures, audit)
  const mfa = new MfaService({
    mfa: repositories.mfa, secret: config.jwtSecret, sealingKeys: config.sealing.keys, issuer: config.mfa.issuer
  })
  const claims = new AccountClaims({ users, sessions, notices })
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
    now
  })
  const passkeys: PasskeyService = new PasskeyService({
    passkeys: repositories.passkeys,
    users,
    challenges: deps.singleUse.passkeyChallenges,
    relyingParty: config.webauthn,
    cursors: deps.cursors,
    notices,
    audit,
    reauthentication
  })
  const federation = federatedSignIn(deps, { claims, notices, reauthentication })
  const ssoRequired = async (email: string) => await repositories.organizationDomains.ssoRequiredFor(emailDomain(email))
  const emailSignIn = emailSignInService(deps, {
    claims, guard: signInGuard, templates, federation, ssoRequired, deliver
  })
  const admission = new Admission({
    users, guard: signInGuard, audit, requireVerifiedEmail: config.messages.emailVerification === 'required', now
  })
  return {
    signInGuard,
    mfa,
    claims,
    reauthentication,
    passkeys,
    federation,
    emailSignIn,
    signIn: new SignInService({
      users,
      revocations: repositories.revocations,
      passwords,
      tokens,
      guard: signInGuard,
      sessions,
      mfa,
      federation,
      passkeys,
      emailSignIn,
      admission,
      audit,
      messageCodes,
      outbox: repositories.outbox,
      templates,
      deliver,
      mfaRequiredRoles: config.mfa.requiredRoles,
      ssoRequired
    }),
    mfaSettings: new MfaSettingsService({ mfa, guard: signInGuard, users, reauthentication, notices, audit })
  }
}
