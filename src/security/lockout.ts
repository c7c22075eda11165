/**
 * Brute-force protection (docs/api.md, "Brute-force lockout"). Failures are counted per
 * account and client address. Five failures from one address within 15 minutes lock the
 * account for that address; twenty from all addresses lock it for everyone. Once an address
 * is locked it adds no more failures, so locking a victim out everywhere takes at least four
 * addresses, each also held to the auth rate limit: one address alone can only lock itself
 * out.
 */
export const FAILURE_WINDOW_MS = 15 * 60 * 1000
export const LOCKOUT_MS = 15 * 60 * 1000
export const FAILURES_PER_ADDRESS = 5
export const FAILURES_PER_ACCOUNT = 20

export type LockoutScope = 'address' | 'account'

/** The lock that a new failure count calls for, if any. */
export function lockoutScope (failures: { fromAddress: number, total: number }): LockoutScope | null {
  if (failures.total >= FAILURES_PER_ACCOUNT) return 'account'
  if (failures.fromAddress >= FAILURES_PER_ADDRESS) return 'address'
  return null
}
