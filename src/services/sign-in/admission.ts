import { Errors } from '../../errors.js'
import { suspendedError, suspensionInForce } from '../../security/suspension.js'
import type { UserPrincipal, UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'
import type { SignInGuard } from './sign-in-guard.js'

export interface AdmissionDependencies {
  users: UsersRepository
  guard: SignInGuard
  audit: AuditTrail
  /** EMAIL_VERIFICATION=required: an unverified account does not sign in. */
  requireVerifiedEmail: boolean
  /** The clock suspensions end by (Date.now by default). */
  now?: () => number
}

/**
 * Whether an account that proved who it is may sign in (docs/api.md, "Sign-in and sessions"):
 * the same rules for every way in (a password, a provider, a passkey, a code by e-mail, an
 * answered MFA challenge).
 */
export class Admission {
  constructor (private readonly deps: AdmissionDependencies) {}

  /**
   * The account a sign-in other than by password reached, once it may sign in: it exists
   * (else `Missing`), is not locked, and has its address verified where that is required.
   */
  async admit (
    context: RequestContext,
    userId: string,
    details: Record<string, unknown>,
    Missing: new () => Error
  ): Promise<UserPrincipal> {
    const principal = await this.deps.users.findPrincipal(userId)
    if (principal === undefined) throw new Missing()
    await this.deps.guard.refuseIfLocked(context, principal.id, details)
    await this.assertMaySignIn(context, principal, details)
    return principal
  }

  /**
   * Once the caller has proved who they are (never before, so that a refusal tells a guesser
   * nothing), every way in refuses a suspended account, and an unverified one where
   * verification is required.
   */
  async assertMaySignIn (
    context: RequestContext,
    principal: UserPrincipal,
    details: Record<string, unknown>
  ): Promise<void> {
    const suspension = suspensionInForce(principal, (this.deps.now ?? Date.now)())
    if (suspension !== undefined) {
      await this.deps.audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: principal.id, targetId: principal.id, details: { ...details, reason: 'suspended' } })
      throw suspendedError(suspension)
    }
    if (!this.deps.requireVerifiedEmail || principal.emailVerified) return
    await this.deps.audit.recordIn(context, 'auth.login_failed', { outcome: 'failure', actorId: principal.id, targetId: principal.id, details: { ...details, reason: 'email_not_verified' } })
    throw new Errors.EMAIL_NOT_VERIFIED()
  }
}
