import type { Device, LoginBody, OAuthCallbackQuery, TokenPair } from '../../schemas/auth.js'
import type { MfaChallenge, MfaCodeRequestBody, MfaVerifyBody, SignInResult } from '../../schemas/mfa.js'
import { Errors, tokenFailure } from '../errors.js'
import type { PasswordHasher } from '../security/passwords.js'
import type { TokenService } from '../security/tokens.js'
import type { OutboxRepository } from '../store/outbox.js'
import type { RevocationsRepository } from '../store/revocations.js'
import type { UserPrincipal, UsersRepository } from '../store/users.js'
import type { AuditTrail } from './audit-trail.js'
import type { Caller, RequestContext } from './context.js'
import { MESSAGE_CODE_TTL_MS, type MessageCodes } from './message-codes.js'
import type { MessageTemplates } from './messages.js'
import type { MfaMethod, MfaService } from './mfa.js'
import type { OAuthService } from './oauth.js'
import type { SessionService } from './sessions.js'
import type { SignInGuard } from './sign-in-guard.js'

export interface SignInDependencies {
  users: UsersRepository
  revocations: RevocationsRepository
  passwords: PasswordHasher
  tokens: TokenService
  guard: SignInGuard
  sessions: SessionService
  mfa: MfaService
  oauth: OAuthService
  audit: AuditTrail
  messageCodes: MessageCodes
  outbox: OutboxRepository
  templates: MessageTemplates
  deliver: () => void
  /** EMAIL_VERIFICATION=required: an unverified account does not sign in. */
  requireVerifiedEmail: boolean
}

/**
 * Every way into a session (docs/api.md, "Sign-in and sessions"): a password, a provider's
 * sign-in, the MFA challenge either of them may answer, a refresh; and out of one.
 */
export class SignInService {
  constructor (private readonly deps: SignInDependencies) {}

  /** E-mail and password: a session, or the MFA challenge when the account has MFA on. */
  async withPassword (context: RequestContext, { email, password, device }: LoginBody): Promise<SignInResult> {
    const { users, passwords, guard, audit } = this.deps
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
    await this.#assertEmailVerified(context, principal, { email })
    return await this.#complete(context, principal, device, 'password')
  }

  /** A provider's callback: the linked, linked-by-e-mail or new account signs in. */
  async withProvider (context: RequestContext, provider: string, callback: OAuthCallbackQuery): Promise<SignInResult> {
    const { oauth, users, guard, audit } = this.deps
    const signIn = await oauth.callback(provider, callback)
    const principal = await users.findPrincipal(signIn.userId)
    if (principal === undefined) throw new Errors.INVALID_CREDENTIALS()
    await guard.refuseIfLocked(context, principal.id, { provider: signIn.provider })
    await this.#assertEmailVerified(context, principal, { provider: signIn.provider })
    if (signIn.created) {
      await audit.recordIn(context, 'user.created', { outcome: 'success', actorId: signIn.userId, targetId: signIn.userId, details: { provider: signIn.provider } })
    }
    await audit.recordIn(context, 'auth.oauth_login', {
      outcome: 'success', actorId: signIn.userId, targetId: signIn.userId, details: { provider: signIn.provider, created: signIn.created, linked: signIn.linked }
    })
    return await this.#complete(context, principal, {}, `oauth:${signIn.provider}`)
  }

  /** Answers an MFA challenge with a TOTP or backup code; the challenge is good once. */
  async answerChallenge (context: RequestContext, { mfa_token: mfaToken, code }: MfaVerifyBody): Promise<TokenPair> {
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
    const claimed = await revocations.claim(claims.jti, new Date(claims.exp * 1000).toISOString(), new Date().toISOString())
    if (!claimed) throw new Errors.INVALID_TOKEN() // the challenge was already answered
    await audit.recordIn(context, 'auth.mfa_verified', { outcome: 'success', actorId: userId, targetId: userId, details: { method } })
    return await this.#startSession(context, principal, claims.device as Device | undefined, `mfa:${method}`)
  }

  /**
   * Sends a sign-in code for a challenge by e-mail or SMS, when that factor is on: good for
   * 5 minutes, once, and counted by the lockout like a TOTP code when answered.
   */
  async sendChallengeCode (context: RequestContext, { mfa_token: mfaToken, method }: MfaCodeRequestBody): Promise<void> {
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

  /** A new pair for a refresh token, which is spent (or, for a retry, the pair it was spent for); `receivedAt`: when the request arrived (ms). */
  async refresh (context: RequestContext, refreshToken: string, receivedAt: number): Promise<TokenPair> {
    const { sessions, audit } = this.deps
    try {
      const { pair, userId, retry } = await sessions.refresh(refreshToken, receivedAt)
      await audit.recordIn(context, 'auth.refresh', { outcome: 'success', actorId: userId, targetId: userId, ...(retry && { details: { retry: true } }) })
      return pair
    } catch (error) {
      if (error instanceof Errors.TOKEN_REUSED) await audit.recordIn(context, 'auth.token_reused', { outcome: 'failure', details: {} })
      throw error
    }
  }

  /** Revokes the caller's access token and ends its session (and the given refresh token's). */
  async signOut (context: RequestContext, caller: Caller, refreshToken: string | undefined): Promise<void> {
    await this.deps.sessions.logout(caller, refreshToken)
    await this.deps.audit.recordIn(context, 'auth.logout', { outcome: 'success', targetId: caller.id })
  }

  /**
   * The last step of every sign-in path (password, provider): a session, or, when the account
   * has MFA on, the challenge that `answerChallenge` completes.
   */
  async #complete (context: RequestContext, principal: UserPrincipal, device: Device | Record<string, unknown> | undefined, method: string): Promise<SignInResult> {
    const methods: MfaChallenge['methods'] = [...(principal.mfaEnabled ? ['totp' as const, 'backup_code' as const] : []), ...principal.messageFactors]
    if (methods.length > 0) {
      const challenge = this.deps.tokens.issueMfaToken(principal.id, device === undefined ? {} : { ...device })
      return { mfa_required: true, mfa_token: challenge.token, methods }
    }
    return { ...await this.#startSession(context, principal, device as Device | undefined, method), mfa_required: false }
  }

  /** An MFA challenge's claims and its account; a challenge ends with its account. */
  async #challenge (mfaToken: string) {
    let claims
    try {
      claims = this.deps.tokens.verify(mfaToken, 'mfa')
    } catch (error) {
      throw tokenFailure(error)
    }
    const principal = await this.deps.users.findPrincipal(claims.sub)
    if (principal === undefined) throw new Errors.INVALID_TOKEN()
    return { claims, principal }
  }

  /** With EMAIL_VERIFICATION=required, an account whose address is unverified is refused once its secret is proved. */
  async #assertEmailVerified (context: RequestContext, principal: UserPrincipal, details: Record<string, unknown>): Promise<void> {
    if (!this.deps.requireVerifiedEmail || principal.emailVerified) return
    await this.deps.audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: principal.id, targetId: principal.id, details: { ...details, reason: 'email_not_verified' } })
    throw new Errors.EMAIL_NOT_VERIFIED()
  }

  /**
   * A completed sign-in: the address's failures stop counting toward the lockout (only here,
   * so a password answered with a challenge does not wipe the wrong codes counted so far), and
   * a session, audited as `auth.login` with the method that proved the caller (`mfa:totp`
   * after a challenge).
   */
  async #startSession (context: RequestContext, principal: UserPrincipal, device: Device | undefined, method: string): Promise<TokenPair> {
    const { guard, sessions, audit } = this.deps
    await guard.recordSuccess(principal.id, context.ip)
    const pair = await sessions.start(principal, device)
    await audit.recordIn(context, 'auth.login', { outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method, device } })
    return pair
  }
}
