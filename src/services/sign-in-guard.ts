import { Errors } from '../errors.js'
import { FAILURE_WINDOW_MS, LOCKOUT_MS, lockoutScope } from '../security/lockout.js'
import { addressKey } from '../security/network.js'
import type { SignInFailuresRepository } from '../store/sign-in-failures.js'

/** Failures are kept this long: longer than any rule looks back (the lockout 15 minutes, anomalies 15 minutes). */
const FAILURE_RETENTION_MS = 24 * 60 * 60 * 1000

const iso = (ms: number) => new Date(ms).toISOString()

/** Applies the brute-force rule (src/security/lockout.ts) to sign-in attempts. */
export class SignInGuard {
  constructor (private readonly failures: SignInFailuresRepository, private readonly now: () => number = Date.now) {}

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
    const times = { now: iso(now), countSince: iso(now - FAILURE_WINDOW_MS), keepSince: iso(now - FAILURE_RETENTION_MS), lockUntil: iso(now + LOCKOUT_MS) }
    if (await this.failures.recordFailure(userId, addressKey(ip), times, lockoutScope)) throw new Errors.ACCOUNT_LOCKED()
  }

  async recordSuccess (userId: string, ip: string): Promise<void> {
    await this.failures.clear(userId, addressKey(ip), iso(this.now()))
  }
}
