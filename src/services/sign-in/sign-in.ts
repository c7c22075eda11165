import type { SignInDevice, LoginBody, OAuthCallbackQuery, OAuthExchangeBody, TokenPair } from '../../../schemas/auth.js'
import type { EmailSignInVerifyBody } from '../../../schemas/email-sign-in.js'
import type { PasskeyAuthenticationBody } from '../../../schemas/passkeys.js'
import type { Role } from '../../../schemas/rbac.js'
import type { MfaChallenge, MfaCodeRequestBody, MfaVerifyBody, SignInResult } from '../../../schemas/mfa.js'
import { Errors, isServiceError, tokenFailure } from '../../errors.js'
import type { PasswordHasher } from '../../security/passwords.js'
import { mfaRequired, mustEnrolMfa } from '../../security/permissions.js'
import type { TokenService } from '../../security/tokens.js'
import type { OutboxRepository } from '../../store/outbox.js'
import type { RevocationsRepository } from '../../store/revocations.js'
import { normalizeEmail, type UserPrincipal, type UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import { MESSAGE_CODE_TTL_MS, type MessageCodes, type MessageTemplates } from '../messaging/index.js'
import type { Admission } from './admission.js'
import type { EmailSignInService } from './email-sign-in.js'
import type { MfaMethod, MfaService } from './mfa.js'
import type { FederatedSignInService, FederatedSignIn } from './federated-sign-in.js'
import type { PasskeyService } from './passkeys.js'
import type { OrganizationSelection, SessionService } from '../sessions/index.js'
import type { SignInGuard } from './sign-in-guard.js'

/** The device the console's sessions are listed as. */
const CONSOLE_DEVICE: SignInDevice = { id: 'console', name: 'Console' }

/** Who signed in at the authorization server's pages, and how (RFC 8176 methods). */
export interface SignInProof { userId: string, amr: string[] }

/** How a completed sign-in ends: in an API session, or in the proof alone. */
type SignInEnding<Ended> = (
  context: RequestContext, principal: UserPrincipal, device: SignInDevice | undefined, method: string, amr: string[]
) => Promise<Ended>

export interface SignInDependencies {
  users: UsersRepository
  revocations: RevocationsRepository
  passwords: PasswordHasher
  tokens: TokenService
  guard: SignInGuard
  sessions: SessionService
  mfa: MfaService
  federation: FederatedSignInService
  passkeys: PasskeyService
  emailSignIn: EmailSignInService
  /** Whether an account that proved who it is may sign in. */
  admission: Admission
  audit: AuditTrail
  messageCodes: MessageCodes
  outbox: OutboxRepository
  templates: MessageTemplates
  deliver: () => void
  /** MFA_REQUIRED_ROLES: an account holding one whose only second factor is a passkey signs in with it. */
  mfaRequiredRoles: readonly Role[]
  /** Whether an address's domain signs in through its organization's IdP only (docs/api.md, "Enterprise sign-in"). */
  ssoRequired: (email: string) => Promise<boolean>
}

/**
 * Every way into a session (docs/api.md, "Sign-in and sessions"): a password, a provider's
 * sign-in, a passkey, the MFA challenge any of them may answer, a refresh; and out of one.
 */
export class SignInService {
  constructor (private readonly deps: SignInDependencies) {}

  /** E-mail and password: a session, or the MFA challenge when the account has MFA on. */
  async withPassword (context: RequestContext, body: LoginBody): Promise<SignInResult> {
    const { principal, amr } = await this.#passwordProof(context, body)
    return await this.#complete(context, principal, body.device, 'password', amr, this.#session)
  }

  /**
   * The authorization server's sign-in page (docs/api.md, "Authorization server"): the same
   * checks as `withPassword`, ending in the proof instead of an API session, or the challenge.
   */
  async proveWithPassword (context: RequestContext, body: LoginBody): Promise<SignInProof | MfaChallenge> {
    const { principal, amr } = await this.#passwordProof(context, body)
    return await this.#complete(context, principal, {}, 'password', amr, this.#proof)
  }

  async #passwordProof (
    context: RequestContext,
    { email: given, password }: LoginBody
  ): Promise<{ principal: UserPrincipal, amr: string[] }> {
    const { users, passwords, guard, audit, ssoRequired } = this.deps
    // One form of the address for every check below (the authorization server's page passes its field as typed).
    const email = normalizeEmail(given)
    // Told for any address of the domain, account or not: discovery tells as much to anyone.
    if (await ssoRequired(email)) {
      await audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: null, targetId: null, details: { email, reason: 'sso_required' } })
      throw new Errors.SSO_REQUIRED()
    }
    const account = await users.findByEmail(email)
    // Unknown e-mail, password-less account and wrong password cost the same hash and answer alike.
    if (account === undefined) {
      await passwords.verifyAgainstDummy(password)
      await audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: null, targetId: null, details: { email, reason: 'unknown_email' } })
      throw new Errors.INVALID_CREDENTIALS()
    }
    const stored = account.password_hash
    const valid = await guard.checkSecret(context, account.id, 'auth.login_failed', { email, reason: 'wrong_password' }, async () =>
      stored !== null ? await passwords.verify(password, stored) : await passwords.verifyAgainstDummy(password))
    if (!valid) throw new Errors.INVALID_CREDENTIALS()
    const principal = await users.findPrincipal(account.id)
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    await this.deps.admission.assertMaySignIn(context, principal, { email })
    return { principal, amr: ['pwd'] }
  }

  /**
   * A provider's callback: the linked, linked-by-e-mail or new account signs in. `browserState`
   * is the state cookie of the browser making the callback. A flow a browser application
   * started ends in a redirect back to it, with a one-time code or an error code
   * (docs/api.md, "Browser applications").
   */
  async withProvider (
    context: RequestContext,
    provider: string,
    callback: OAuthCallbackQuery,
    browserState: string | undefined
  ): Promise<{ result: SignInResult } | { redirect: string }> {
    const { federation } = this.deps
    const flow = await federation.takeState(provider, callback, browserState)
    const { redirectTo, codeChallenge } = flow.pending
    if (redirectTo === null || codeChallenge === null) {
      const principal = await this.#providerAccount(context, await federation.finish(context, flow, callback))
      return { result: await this.#complete(context, principal, {}, `oauth:${flow.provider}`, ['fed'], this.#session) }
    }
    const back = new URL(redirectTo)
    try {
      back.searchParams.set('code', await this.exchangeCodeFor(context, await federation.finish(context, flow, callback), codeChallenge))
    } catch (error) {
      if (!isServiceError(error)) throw error
      back.searchParams.set('error', error.code)
    }
    return { redirect: back.href }
  }

  /**
   * A provider's sign-in for a browser application (an organization's identity provider's too,
   * src/services/sso/): once the account may sign in, the one-time code it exchanges with the
   * verifier of `codeChallenge`.
   */
  async exchangeCodeFor (context: RequestContext, signIn: FederatedSignIn, codeChallenge: string): Promise<string> {
    const principal = await this.#providerAccount(context, signIn)
    return await this.deps.federation.issueExchangeCode(principal.id, signIn.provider, codeChallenge)
  }

  /** A browser application's one-time code and PKCE verifier: what the callback would have answered. */
  async withExchangeCode (context: RequestContext, body: OAuthExchangeBody): Promise<SignInResult> {
    return await this.#exchangeCode(context, body, this.#session)
  }

  /** The authorization server's sign-in page, back from a provider: `withExchangeCode`'s rules, ending in the proof. */
  async proveWithExchangeCode (
    context: RequestContext,
    body: OAuthExchangeBody
  ): Promise<(SignInProof & { mfa_required: false }) | MfaChallenge> {
    return await this.#exchangeCode(context, body, this.#proof)
  }

  async #exchangeCode<Ended> (
    context: RequestContext,
    { code, code_verifier: codeVerifier }: OAuthExchangeBody,
    end: SignInEnding<Ended>
  ) {
    const { userId, provider } = await this.deps.federation.takeExchangeCode(code, codeVerifier)
    const principal = await this.deps.admission.admit(context, userId, { provider }, Errors.INVALID_OAUTH_STATE)
    return await this.#complete(context, principal, {}, `oauth:${provider}`, ['fed'], end)
  }

  /** The account a provider sign-in reached, once it may sign in; audited. */
  async #providerAccount (context: RequestContext, signIn: FederatedSignIn): Promise<UserPrincipal> {
    const principal = await this.deps.admission.admit(
      context, signIn.userId, { provider: signIn.provider }, Errors.INVALID_CREDENTIALS
    )
    await this.deps.audit.recordIn(context, 'auth.oauth_login', {
      outcome: 'success', actorId: signIn.userId, targetId: signIn.userId, details: { provider: signIn.provider, created: signIn.created, linked: signIn.linked }
    })
    return principal
  }

  /**
   * A passkey's assertion (docs/api.md, "Passkeys"). With user verification (a PIN or a
   * biometric on the authenticator) it proves two factors, something held and something known
   * or been, and completes the sign-in; without, it stands for the password and the MFA rules
   * apply as after one. Audited as `auth.login` with the method `passkey`.
   */
  async withPasskey (context: RequestContext, body: PasskeyAuthenticationBody): Promise<SignInResult> {
    return await this.#passkey(context, body, this.#session)
  }

  /** The authorization server's sign-in page with a passkey: `withPasskey`'s rules, ending in the proof. */
  async proveWithPasskey (
    context: RequestContext,
    body: PasskeyAuthenticationBody
  ): Promise<(SignInProof & { mfa_required: false }) | MfaChallenge> {
    return await this.#passkey(context, body, this.#proof)
  }

  async #passkey<Ended> (context: RequestContext, body: PasskeyAuthenticationBody, end: SignInEnding<Ended>) {
    const { userId, userVerified } = await this.deps.passkeys.verifyAssertion(context, body)
    const principal = await this.deps.admission.admit(context, userId, { method: 'passkey' }, Errors.INVALID_CREDENTIALS)
    if (userVerified) return { ...await end(context, principal, undefined, 'passkey', ['hwk', 'user', 'mfa']), mfa_required: false as const }
    return await this.#complete(context, principal, undefined, 'passkey', ['hwk'], end)
  }

  /**
   * A code sent by e-mail, with its address, or the token a confirmed link handed the
   * application (docs/api.md, "Signing in by e-mail"): it proves the address (claiming the
   * account, or making one), and stands for the password: the MFA rules apply as after one.
   */
  async withEmail (context: RequestContext, body: EmailSignInVerifyBody): Promise<SignInResult> {
    return await this.#email(context, body, this.#session)
  }

  /** The authorization server's sign-in page with a code sent by e-mail: `withEmail`'s rules, ending in the proof. */
  async proveWithEmail (context: RequestContext, body: EmailSignInVerifyBody): Promise<SignInProof | MfaChallenge> {
    return await this.#email(context, body, this.#proof)
  }

  async #email<Ended> (
    context: RequestContext, { email, code, token }: EmailSignInVerifyBody, end: SignInEnding<Ended>
  ) {
    const userId = await this.deps.emailSignIn.signedIn(context, { email, code, token })
    const principal = await this.deps.admission.admit(context, userId, { method: 'email' }, Errors.INVALID_ONE_TIME_TOKEN)
    return await this.#complete(context, principal, undefined, 'email', ['otp'], end)
  }

  /** Answers an MFA challenge with a TOTP or backup code; the challenge is good once. */
  async answerChallenge (context: RequestContext, body: MfaVerifyBody): Promise<TokenPair> {
    const { principal, device, method, amr } = await this.#challengeAnswered(context, body)
    return await this.#session(context, principal, device, `mfa:${method}`, amr)
  }

  /** The authorization server's MFA page: the challenge answered, ending in the proof. */
  async proveChallenge (context: RequestContext, body: MfaVerifyBody): Promise<SignInProof> {
    const { principal, method, amr } = await this.#challengeAnswered(context, body)
    return await this.#proof(context, principal, undefined, `mfa:${method}`, amr)
  }

  async #challengeAnswered (context: RequestContext, { mfa_token: mfaToken, code }: MfaVerifyBody) {
    const { guard, mfa, revocations, audit } = this.deps
    const { claims, principal } = await this.#challenge(mfaToken)
    const userId = principal.id
    // Wrong codes count toward the same lockout as wrong passwords.
    let method = null as MfaMethod | null
    const right = await guard.checkSecret(context, userId, 'auth.mfa_failed', {}, async () => {
      method = await mfa.verifyCode(userId, code) ?? await this.deps.messageCodes.accept(userId, claims.jti, code)
      return method !== null
    })
    if (!right) throw new Errors.INVALID_MFA_CODE()
    // The address may have changed (and become unverified) since the challenge was issued.
    await this.deps.admission.assertMaySignIn(context, principal, { method })
    const claimed = await audit.recorded(context, [{ event: 'auth.mfa_verified', outcome: 'success', actorId: userId, targetId: userId, details: { method } }])(
      async (trx) =>
        await revocations.claim(claims.jti, new Date(claims.exp * 1000).toISOString(), new Date().toISOString(), trx),
      (result) => result)
    if (!claimed) throw new Errors.INVALID_TOKEN() // the challenge was already answered
    const amr = [...new Set([...claims.amr ?? [], method === 'sms' ? 'sms' : 'otp', 'mfa'])]
    return { principal, device: claims.device as SignInDevice | undefined, method: method as MfaMethod, amr }
  }

  /**
   * Sends a sign-in code for a challenge by e-mail or SMS, when that factor is on: good for
   * 5 minutes, once, and counted by the lockout like a TOTP code when answered.
   */
  async sendChallengeCode (
    context: RequestContext,
    { mfa_token: mfaToken, method }: MfaCodeRequestBody
  ): Promise<void> {
    const { users, messageCodes, outbox, templates, audit } = this.deps
    const { claims, principal } = await this.#challenge(mfaToken)
    if (!principal.messageFactors.includes(method)) throw new Errors.CONFLICT(`Sign-in codes by ${method === 'email' ? 'e-mail' : 'SMS'} are not enabled for this account`)
    const to = method === 'email' ? (await users.findById(principal.id))?.email : await users.findPhone(principal.id)
    if (to === undefined || to === null) throw new Errors.CONFLICT('This account has no phone number for SMS codes')
    const code = await messageCodes.issue(principal.id, claims.jti, method)
    if (code === null) throw new Errors.CONFLICT('Enough codes were sent for this sign-in; sign in again for more')
    await outbox.add(templates.signInCode(method, to, code, MESSAGE_CODE_TTL_MS / 60_000), new Date().toISOString())
    this.deps.deliver()
    await audit.recordIn(context, 'mfa.code_sent', { outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method } })
  }

  /**
   * A new pair for a refresh token, which is spent (or, for a retry, the pair it was spent for).
   * With a selection, the pair and the session's later ones speak for that organization (or none).
   */
  async refresh (context: RequestContext, refreshToken: string, selection?: OrganizationSelection): Promise<TokenPair> {
    const { sessions, audit } = this.deps
    try {
      const { pair, userId, retry } = await sessions.refresh(refreshToken, (userId) => audit.recorded(context, [
        { event: 'auth.refresh', outcome: 'success', actorId: userId, targetId: userId },
        ...(selection === undefined
          ? []
          : [{ event: 'auth.organization_selected', outcome: 'success', actorId: userId, targetId: userId, details: { organization_id: selection.organizationId } } as const])
      ]), selection)
      // A retry changes nothing: it is recorded on its own.
      if (retry) await audit.recordIn(context, 'auth.refresh', { outcome: 'success', actorId: userId, targetId: userId, details: { retry: true } })
      return pair
    } catch (error) {
      if (error instanceof Errors.TOKEN_REUSED) await audit.recordIn(context, 'auth.token_reused', { outcome: 'failure', details: {} })
      throw error
    }
  }

  /**
   * The console's session (docs/console.md): an API session for a sign-in the authorization
   * server's pages proved a moment ago, every rule of which they applied; the account is
   * admitted again, as it may have been suspended or given a role that needs MFA meanwhile.
   */
  async consoleSession (context: RequestContext, proof: SignInProof): Promise<TokenPair> {
    const principal = await this.deps.users.findPrincipal(proof.userId)
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    await this.deps.admission.assertMaySignIn(context, principal, { through: 'console' })
    if (mustEnrolMfa(principal, this.deps.mfaRequiredRoles)) throw new Errors.MFA_ENROLLMENT_REQUIRED()
    return await this.#session(context, principal, CONSOLE_DEVICE, 'console', proof.amr)
  }

  /** Revokes the caller's access token and ends its session (and the given refresh token's). */
  async signOut (context: RequestContext, refreshToken: string | undefined): Promise<void> {
    const caller = callerOf(context)
    await this.deps.sessions.logout(caller, refreshToken, this.deps.audit.recorded(context, [{ event: 'auth.logout', outcome: 'success', targetId: caller.id }]))
  }

  /**
   * The last step of every sign-in path with one factor (password, provider, a passkey without
   * user verification): a session, or, when the account has MFA on, the challenge that
   * `answerChallenge` completes. An account whose role must use MFA and whose only second
   * factor is a passkey is told to sign in with the passkey (docs/api.md, "Required roles").
   */
  async #complete<Ended> (
    context: RequestContext,
    principal: UserPrincipal,
    device: SignInDevice | Record<string, unknown> | undefined,
    method: string,
    amr: string[],
    end: SignInEnding<Ended>
  ): Promise<(Ended & { mfa_required: false }) | MfaChallenge> {
    const methods: MfaChallenge['methods'] = [...(principal.mfaEnabled ? ['totp' as const, 'backup_code' as const] : []), ...principal.messageFactors]
    if (methods.length === 0 && principal.hasPasskey && mfaRequired(principal, this.deps.mfaRequiredRoles)) methods.push('passkey')
    if (methods.length > 0) {
      // The challenge names the credentials it was opened under: a new password or a claim ends it.
      const challenge = this.deps.tokens.issueMfaToken(
        principal.id, device === undefined ? {} : { ...device }, { amr, cv: principal.credentialsVersion }
      )
      return { mfa_required: true, mfa_token: challenge.token, methods }
    }
    return { ...await end(context, principal, device as SignInDevice | undefined, method, amr), mfa_required: false }
  }

  /**
   * An MFA challenge's claims and its account; a challenge ends with its account, and with a new password or a claim.
   */
  async #challenge (mfaToken: string) {
    let claims
    try {
      claims = this.deps.tokens.verify(mfaToken, 'mfa')
    } catch (error) {
      throw tokenFailure(error)
    }
    const principal = await this.deps.users.findPrincipal(claims.sub)
    if (principal === undefined || (claims.cv ?? 0) !== principal.credentialsVersion) throw new Errors.INVALID_TOKEN()
    return { claims, principal }
  }

  /**
   * A completed sign-in: the address's failures stop counting toward the lockout (only here,
   * so a password answered with a challenge does not wipe the wrong codes counted so far), and
   * a session, audited as `auth.login` with the method that proved the caller (`mfa:totp`
   * after a challenge).
   */
  readonly #session: SignInEnding<TokenPair> = async (context, principal, device, method, amr) => {
    const { guard, sessions, audit } = this.deps
    await guard.recordSuccess(principal.id, context.ip)
    return await sessions.start(principal, device, amr,
      audit.recorded(context, [{ event: 'auth.login', outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method, device } }]))
  }

  /**
   * A sign-in at the authorization server's pages, audited as `auth.login` like any; its session
   * is opened once the authorization server signed the browser in with it
   * (`SessionService.openAtAuthorizationServer`).
   */
  readonly #proof: SignInEnding<SignInProof> = async (context, principal, _device, method, amr) => {
    // The API would give such an account a token good for enrolment alone; an application gets nothing.
    if (mustEnrolMfa(principal, this.deps.mfaRequiredRoles)) {
      await this.deps.audit.recordIn(context, 'auth.login_failed', {
        outcome: 'failure', actorId: principal.id, targetId: principal.id, details: { method, through: 'authorization_server', reason: 'mfa_enrollment_required' }
      })
      throw new Errors.MFA_ENROLLMENT_REQUIRED()
    }
    await this.deps.guard.recordSuccess(principal.id, context.ip)
    await this.deps.audit.recordIn(context, 'auth.login', {
      outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method, through: 'authorization_server' }
    })
    return { userId: principal.id, amr }
  }
}
