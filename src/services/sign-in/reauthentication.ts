import type { PasskeyAuthenticationBody } from '../../../schemas/passkeys.js'
import type { ProofMethod, ProofOffer } from '../../../schemas/proof.js'
import type { Role } from '../../../schemas/rbac.js'
import type { ReauthenticateBody, Reauthentication } from '../../../schemas/reauthentication.js'
import { Errors, validationFailed } from '../../errors.js'
import type { PasswordHasher } from '../../security/passwords.js'
import { mustEnrolMfa } from '../../security/permissions.js'
import type { OutboxRepository } from '../../store/outbox.js'
import type { SessionsRepository } from '../../store/sessions.js'
import type { MessageFactor, UserPrincipal, UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import { assertAccountHolder, type Caller, callerOf, type RequestContext } from '../context.js'
import { MESSAGE_CODE_TTL_MS, type MessageCodes, type MessageTemplates } from '../messaging/index.js'
import type { MfaService } from './mfa.js'
import type { SignInGuard } from './sign-in-guard.js'

/** A step-up lets its session make sensitive changes this long. */
export const REAUTHENTICATION_TTL_MS = 5 * 60_000
/**
 * A sign-in this recent is the proof of the first enrolment of an account that must enrol
 * (MFA_REQUIRED_ROLES) and has no second factor yet (docs/security.md, "Sensitive changes").
 */
export const ENROLMENT_SIGN_IN_WINDOW_S = 10 * 60

/** A proof given beside a sensitive change (schemas/proof.ts). */
export interface InlineProof {
  current_password?: string
  mfa_code?: string
}

export interface ProofOptions {
  /** The current password was checked already (a password change checks it whatever the proof). */
  passwordProved?: boolean
  /** The change is a first second factor: an account that must enrol may make it right after signing in. */
  firstEnrolment?: boolean
}

const OFFERS: Record<ProofMethod, string> = {
  password: 'current_password beside the change, or { "password" } to POST /api/v1/auth/reauthenticate',
  totp: 'mfa_code beside the change, or { "code" } to POST /api/v1/auth/reauthenticate: a code of the authenticator app',
  backup_code: 'mfa_code beside the change, or { "code" } to POST /api/v1/auth/reauthenticate: an unused backup code',
  email: 'a code sent by POST /api/v1/auth/reauthenticate/code { "method": "email" }, as mfa_code or { "code" }',
  sms: 'a code sent by POST /api/v1/auth/reauthenticate/code { "method": "sms" }, as mfa_code or { "code" }',
  passkey: '{ "passkey": { challenge_id, response } } to POST /api/v1/auth/reauthenticate, with options from /api/v1/auth/passkeys/authentication/options'
}

export interface ReauthenticationDependencies {
  users: UsersRepository
  sessions: SessionsRepository
  passwords: PasswordHasher
  guard: SignInGuard
  mfa: MfaService
  messageCodes: MessageCodes
  /** Verifies a passkey's assertion (PasskeyService.verifyAssertion): whose passkey answered. */
  verifyPasskey: (context: RequestContext, body: PasskeyAuthenticationBody) => Promise<{ userId: string }>
  outbox: OutboxRepository
  templates: MessageTemplates
  deliver: () => void
  audit: AuditTrail
  mfaRequiredRoles: readonly Role[]
  now?: () => number
}

/**
 * The sensitive-change rule (docs/security.md, "Sensitive changes"): a change to how an account
 * signs in or is recovered needs a proof made for it, never an access token alone. The proof
 * comes beside the change (`current_password`, `mfa_code`) or as a step-up of the session
 * (POST /auth/reauthenticate), good 5 minutes for that session only. An account with a second
 * factor (TOTP, codes by message, a passkey) proves a factor: its password alone is not enough.
 */
export class ReauthenticationService {
  readonly #now: () => number

  constructor (private readonly deps: ReauthenticationDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * Throws REAUTHENTICATION_REQUIRED (with the proofs the account can offer) unless the
   * caller's session stepped up within 5 minutes, or `proof` holds a right one. A wrong password
   * or code is refused as at sign-in, and counted by the lockout.
   */
  async require (context: RequestContext, proof: InlineProof, options: ProofOptions = {}): Promise<void> {
    const caller = callerOf(context)
    assertAccountHolder(caller, 'a sensitive change')
    const principal = await this.#principal(caller)
    const until = await this.deps.sessions.reauthenticatedUntil(caller.id, caller.jti)
    if (until !== null && Date.parse(until) > this.#now()) return
    const signedInRecently = this.#now() / 1000 - caller.authTime <= ENROLMENT_SIGN_IN_WINDOW_S
    const { mfaRequiredRoles } = this.deps
    if (options.firstEnrolment === true && mustEnrolMfa(principal, mfaRequiredRoles) && signedInRecently) return
    if (proof.mfa_code !== undefined) {
      await this.#checkCode(context, caller, proof.mfa_code)
      return
    }
    if (!hasSecondFactor(principal)) {
      if (options.passwordProved === true) return
      if (proof.current_password !== undefined) {
        await this.checkPassword(context, caller.id, proof.current_password, 'current_password')
        return
      }
    }
    throw await this.#required(principal)
  }

  /** The step-up: one proof lets the caller's session make sensitive changes for 5 minutes. */
  async reauthenticate (context: RequestContext, body: ReauthenticateBody): Promise<Reauthentication> {
    const caller = callerOf(context)
    assertAccountHolder(caller, 'a step-up')
    const given = Object.keys(body).filter((key) => body[key as keyof ReauthenticateBody] !== undefined)
    if (given.length !== 1) throw validationFailed([{ path: '', message: 'must hold exactly one proof: password, code or passkey' }])
    const principal = await this.#principal(caller)
    let method: string
    if (body.password !== undefined) {
      // The password is no proof for an account with a second factor: refused before it is checked.
      if (hasSecondFactor(principal)) throw await this.#required(principal)
      await this.checkPassword(context, caller.id, body.password, 'password')
      method = 'password'
    } else if (body.code !== undefined) {
      method = await this.#checkCode(context, caller, body.code)
    } else if (body.passkey !== undefined) {
      const { userId } = await this.deps.verifyPasskey(context, body.passkey)
      if (userId !== caller.id) throw new Errors.INVALID_CREDENTIALS()
      method = 'passkey'
    } else {
      throw new Error('a body with one proof holds one of the three')
    }
    const until = new Date(this.#now() + REAUTHENTICATION_TTL_MS).toISOString()
    const granted = await this.deps.audit.recorded(context, [{ event: 'auth.reauthenticated', outcome: 'success', actorId: caller.id, targetId: caller.id, details: { method } }])(
      async (trx) => await this.deps.sessions.grantReauthentication(caller.id, caller.jti, until, trx),
      (result) => result)
    // The session ended since the token was issued.
    if (!granted) throw new Errors.INVALID_TOKEN()
    return { reauthenticated_until: until, expires_in: REAUTHENTICATION_TTL_MS / 1000 }
  }

  /**
   * Sends a code for a step-up by e-mail or SMS: to a factor the account has on, or, for an
   * account with neither a password nor a second factor, to its verified address. Good for 5
   * minutes, once, for this session.
   */
  async sendCode (context: RequestContext, method: MessageFactor): Promise<void> {
    const caller = callerOf(context)
    assertAccountHolder(caller, 'a step-up')
    const { users, messageCodes, outbox, templates, audit } = this.deps
    const principal = await this.#principal(caller)
    if (!(await this.#offers(principal)).includes(method)) {
      throw new Errors.CONFLICT(`Codes by ${method === 'email' ? 'e-mail' : 'SMS'} are not a proof this account offers`)
    }
    const to = method === 'email' ? (await users.findById(caller.id))?.email : await users.findPhone(caller.id)
    if (to === undefined || to === null) throw new Errors.CONFLICT('This account has no phone number for SMS codes')
    const code = await messageCodes.issue(caller.id, await this.#codeKey(caller), method)
    if (code === null) throw new Errors.CONFLICT('Enough codes were sent for this session; wait for them to expire')
    const message = templates.confirmationCode(method, to, code, MESSAGE_CODE_TTL_MS / 60_000)
    await outbox.add(message, new Date(this.#now()).toISOString())
    this.deps.deliver()
    await audit.recordIn(context, 'mfa.code_sent', { outcome: 'success', actorId: caller.id, targetId: caller.id, details: { method, purpose: 'reauthentication' } })
  }

  /** The proofs the caller's account can give, as REAUTHENTICATION_REQUIRED lists them. */
  async offers (context: RequestContext): Promise<ProofMethod[]> {
    return await this.#offers(await this.#principal(callerOf(context)))
  }

  async #principal (caller: Caller): Promise<UserPrincipal> {
    const principal = await this.deps.users.findPrincipal(caller.id)
    if (principal === undefined) throw new Errors.INVALID_TOKEN()
    return principal
  }

  /** The proofs this account can give, in the order a client would offer them. */
  async #offers (principal: UserPrincipal): Promise<ProofMethod[]> {
    const hasPassword = (await this.deps.users.findPasswordHash(principal.id) ?? null) !== null
    const offers: ProofMethod[] = []
    if (hasPassword && !hasSecondFactor(principal)) offers.push('password')
    if (principal.mfaEnabled) offers.push('totp', 'backup_code')
    offers.push(...principal.messageFactors)
    if (principal.hasPasskey) offers.push('passkey')
    // Neither a password nor a second factor (provider sign-in only): a code to the proved address.
    if (!hasPassword && !hasSecondFactor(principal) && principal.emailVerified) offers.push('email')
    return offers
  }

  async #required (principal: UserPrincipal): Promise<Error> {
    const details: ProofOffer[] = (await this.#offers(principal)).map((proof) => ({ proof, message: OFFERS[proof] }))
    return Object.assign(new Errors.REAUTHENTICATION_REQUIRED(), { details })
  }

  /** The current password, held to the sign-in lockout; a wrong one is a 400 on `field`, as for a password change. */
  async checkPassword (context: RequestContext, userId: string, password: string, field: string): Promise<void> {
    const { users, passwords, guard } = this.deps
    const stored = await users.findPasswordHash(userId)
    const matches = stored !== null && stored !== undefined &&
      await guard.checkSecret(context, userId, 'auth.login_failed', { reason: 'wrong_current_password' }, async () => await passwords.verify(password, stored))
    if (!matches) throw validationFailed([{ path: `/${field}`, message: 'does not match the current password' }])
  }

  /** A TOTP or backup code, or a code sent for this session's step-up; held to the lockout. The method it proved. */
  async #checkCode (context: RequestContext, caller: Caller, code: string): Promise<string> {
    const { mfa, messageCodes, guard } = this.deps
    const key = await this.#codeKey(caller)
    let method: string | null = null
    const right = await guard.checkSecret(context, caller.id, 'auth.mfa_failed', { action: 'reauthenticate' }, async () => {
      method = await mfa.verifyCode(caller.id, code) ?? await messageCodes.accept(caller.id, key, code)
      return method !== null
    })
    if (!right || method === null) throw new Errors.INVALID_MFA_CODE()
    return method
  }

  /** Codes sent for a step-up are kept under the caller's session: good for it alone. */
  async #codeKey (caller: Caller): Promise<string> {
    const sessionId = await this.deps.sessions.sessionOfAccessToken(caller.id, caller.jti)
    if (sessionId === undefined) throw new Errors.INVALID_TOKEN()
    return `reauthentication:${sessionId}`
  }
}

/**
 * TOTP, codes by message or a passkey are enrolled: the account proves a factor (a passkey, or
 * another enrolled factor), not only its password. A password step-up would otherwise undo what
 * the passkey adds: whoever learned the password could add their own passkey or change the rest.
 */
function hasSecondFactor (principal: UserPrincipal): boolean {
  return principal.mfaEnabled || principal.messageFactors.length > 0 || principal.hasPasskey
}
