import { createHash } from 'node:crypto'
import { Errors } from '../../errors.js'
import type { AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'
import type { DeliveryLog } from '../messaging/index.js'

/** PASSWORD_BREACH_CHECK: not asked, asked and recorded, or asked and refused. */
export type BreachCheckMode = 'off' | 'warn' | 'block'
/** Where a new password was chosen, as the audit entries say. */
export type PasswordPurpose = 'registration' | 'change' | 'reset'

/** The longest a check may take: then the password is accepted unchecked (fail open). */
export const BREACH_CHECK_TIMEOUT_MS = 2000

export interface BreachedPasswordsDependencies {
  mode: BreachCheckMode
  /** The range API's base URL (PASSWORD_BREACH_API_URL): `/range/<first 5 hex of SHA-1>` is asked. */
  apiUrl: string
  audit: AuditTrail
  log: Pick<DeliveryLog, 'warn'>
  timeoutMs?: number
}

/** Why the range API gave no usable answer: a redirect or another status. */
class RangeApiRefusal extends Error {}

/**
 * How often the range API has seen `password` in a breach (0: never): only the first 5 hex
 * characters of its SHA-1 leave the service (k-anonymity), and the answer is padded (entries
 * counted 0), so its size says nothing of the prefix either. A redirect is a failure, never
 * followed: the configured API is the only one asked (docs/security.md, "Breached passwords").
 * Written here rather than through the `hibp` package, whose requests follow redirects and
 * cannot be told not to.
 */
async function breachCount (password: string, apiUrl: string, timeoutMs: number): Promise<number> {
  const hash = createHash('sha1').update(password).digest('hex').toUpperCase()
  const response = await fetch(`${apiUrl.replace(/\/+$/, '')}/range/${hash.slice(0, 5)}?mode=sha1`, {
    headers: { 'add-padding': 'true', 'user-agent': 'users-api' },
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs)
  })
  if (response.status !== 200) {
    await response.body?.cancel()
    throw new RangeApiRefusal(response.status >= 300 && response.status < 400 ? 'redirected' : `answered ${response.status}`)
  }
  const suffix = hash.slice(5)
  for (const line of (await response.text()).split('\n')) {
    const [candidate, count] = line.trim().split(':')
    if (candidate === suffix) return Number(count)
  }
  return 0
}

/**
 * New passwords against Have I Been Pwned's Pwned Passwords (docs/security.md, "Breached
 * passwords"). A password seen in a breach is recorded (`warn`) or refused (`block`, 400
 * PASSWORD_BREACHED); an API that cannot answer within BREACH_CHECK_TIMEOUT_MS, answers with a
 * redirect or an error, lets the password through, with a log line and an audit entry: the check
 * must not make sign-up depend on a third party.
 */
export class BreachedPasswords {
  constructor (private readonly deps: BreachedPasswordsDependencies) {}

  async check (context: RequestContext, password: string, purpose: PasswordPurpose): Promise<void> {
    const { mode, apiUrl, audit, log, timeoutMs = BREACH_CHECK_TIMEOUT_MS } = this.deps
    if (mode === 'off') return
    let occurrences: number
    try {
      occurrences = await breachCount(password, apiUrl, timeoutMs)
    } catch (error) {
      const reason = error instanceof RangeApiRefusal
        ? error.message
        : error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : 'unreachable'
      log.warn({ err: error, purpose }, 'breached-password check failed; the password was accepted unchecked')
      await audit.recordIn(context, 'password.breach_check_failed', { outcome: 'failure', details: { purpose, reason } })
      return
    }
    if (occurrences === 0) return
    await audit.recordIn(context, 'password.breached', {
      outcome: mode === 'block' ? 'failure' : 'success', details: { purpose, mode, occurrences }
    })
    if (mode === 'block') throw new Errors.PASSWORD_BREACHED()
  }
}
