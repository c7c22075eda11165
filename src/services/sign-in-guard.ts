import { Errors } from '../errors.js'
import { FAILURE_WINDOW_MS, LOCKOUT_MS, lockoutScope } from '../security/lockout.js'
import { addressKey } from '../security/network.js'
import type { SignInFailuresRepository } from '../store/sign-in-failures.js'

/** Failures are kept this long: longer than any rule looks back (the lockout 15 minutes, anomalies 15 minutes). */
const FAILURE_RETENTION_MS = 24 * 60 * 60 * 1000

/** Applies the brute-force rule (src/security/lockout.ts) to sign-in attempts. */
export class SignInGuard {
  constructor (private readonly failures: SignInFailuresRepository, private readonly now: () => number = Date.now) {}

  /** Throws ACCOUNT_LOCKED while a lockout covers this account from this address. */
  async assertNotLocked (userId: string, ip: string): Promise<void> {
    const until = await this.failures.lockedUntil(userId, addressKey(ip), new Date(this.now()).toISOString())
    if (until !== undefined) throw new Errors.ACCOUNT_LOCKED()
  }

  /** Wrong password or MFA code: counts it, and locks when the rule says so. */
  async recordFailure (userId: string, ip: string): Promise<void> {
    const now = this.now()
    const address = addressKey(ip)
    await this.failures.record(userId, address, new Date(now).toISOString(), new Date(now - FAILURE_RETENTION_MS).toISOString())
    const scope = lockoutScope(await this.failures.count(userId, address, new Date(now - FAILURE_WINDOW_MS).toISOString()))
    if (scope === null) return
    await this.failures.lock(userId, scope === 'account' ? null : address, new Date(now).toISOString(), new Date(now + LOCKOUT_MS).toISOString())
  }

  async recordSuccess (userId: string, ip: string): Promise<void> {
    await this.failures.clear(userId, addressKey(ip), new Date(this.now()).toISOString())
  }
}
