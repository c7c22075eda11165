import { Errors } from '../../errors.js'
import { FAILURE_WINDOW_MS, LOCKOUT_MS, lockoutScope } from '../../security/lockout.js'
import { addressKey } from '../../security/network.js'
import type { SignInFailuresRepository } from '../../store/sign-in-failures.js'
import type { AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'

/** Failures are kept this long: longer than any rule looks back (the lockout 15 minutes, anomalies 15 minutes). */
const FAILURE_RETENTION_MS = 24 * 60 * 60 * 1000

const iso = (ms: number) => new Date(ms).toISOString()

/** The audit events of a refused secret: a password's, or an MFA code's. */
export type SecretFailureEvent = 'auth.login_failed' | 'auth.mfa_failed'

/** Applies the brute-force rule (src/security/lockout.ts) to sign-in attempts. */
export class SignInGuard {
  constructor (
    private readonly failures: SignInFailuresRepository,
    private readonly audit: AuditTrail,
    private readonly now: () => number = Date.now
  ) {}

  /** Throws ACCOUNT_LOCKED while a lockout covers this account from this address. */
  async assertNotLocked (userId: string, ip: string): Promise<void> {
    const until = await this.failures.lockedUntil(userId, addressKey(ip), iso(this.now()))
    if (until !== undefined) throw new Errors.ACCOUNT_LOCKED()
  }

  /**
   * Settles an attempt at the account's password or MFA code once it has been checked, so
   * that simultaneous guesses, which all passed the lock check made before, get no more
   * answers than the rule allows: one that settles under a lockout, right or wrong, throws
   * ACCOUNT_LOCKED uncounted. A wrong one counts, and locks when the rule says so; failures on
   * one account are recorded one after another (SignInFailuresRepository.recordFailure). A
   * right one only reads the lock: it then settles before or after the failure that began it.
   */
  async settle (userId: string, ip: string, right: boolean): Promise<void> {
    if (right) {
      await this.assertNotLocked(userId, ip)
      return
    }
    const now = this.now()
    const times = {
      now: iso(now),
      countSince: iso(now - FAILURE_WINDOW_MS),
      keepSince: iso(now - FAILURE_RETENTION_MS),
      lockUntil: iso(now + LOCKOUT_MS)
    }
    if (await this.failures.recordFailure(userId, addressKey(ip), times, lockoutScope)) {
      throw new Errors.ACCOUNT_LOCKED()
    }
  }

  async recordSuccess (userId: string, ip: string): Promise<void> {
    await this.failures.clear(userId, addressKey(ip), iso(this.now()))
  }

  /** A locked account answers 423 whichever way it signs in, a provider's sign-in included. */
  async refuseIfLocked (context: RequestContext, userId: string, details: Record<string, unknown>): Promise<void> {
    await this.#auditLockRefusal(context, userId, 'auth.login_failed', details, this.assertNotLocked(userId, context.ip))
  }

  /**
   * A secret only the account holder knows (a password, an MFA code), held to the sign-in
   * lockout: 423 while the account is locked for this address, and a wrong secret counts as a
   * failed sign-in and is audited with `details`. The lockout is checked again when the
   * attempt settles, so simultaneous guesses get no more answers than the rule allows. Used by
   * sign-in and MFA verification, and where a signed-in caller proves the secret again (the
   * current password of a password change, the code that turns MFA off or mints backup codes),
   * so that a stolen access token cannot guess it faster than sign-in allows. `check` answers
   * whether the secret was right and acts on nothing (spending a single-use code is part of
   * checking it): the caller acts once this answers true, and answers false with its own error.
   */
  async checkSecret (
    context: RequestContext,
    userId: string,
    event: SecretFailureEvent,
    details: Record<string, unknown>,
    check: () => Promise<boolean>
  ): Promise<boolean> {
    await this.#auditLockRefusal(context, userId, event, details, this.assertNotLocked(userId, context.ip))
    const right = await check()
    await this.#auditLockRefusal(context, userId, event, details, this.settle(userId, context.ip, right))
    if (right) return true
    await this.audit.recordIn(context, event, { outcome: 'failure', actorId: userId, targetId: userId, details })
    return false
  }

  /** Awaits a lock check, auditing its 423 with `details` (what was presented) and the reason. */
  async #auditLockRefusal<T> (
    context: RequestContext,
    userId: string,
    event: SecretFailureEvent,
    details: Record<string, unknown>,
    check: Promise<T>
  ): Promise<T> {
    try {
      return await check
    } catch (error) {
      if (error instanceof Errors.ACCOUNT_LOCKED) {
        await this.audit.recordIn(context, event, { outcome: 'failure', actorId: userId, targetId: userId, details: { ...details, reason: 'locked' } })
      }
      throw error
    }
  }
}
