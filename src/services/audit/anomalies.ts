import type { SessionsRepository } from '../../store/sessions.js'
import type { SignInFailuresRepository } from '../../store/sign-in-failures.js'

/** The access check's anomaly detector: how many anomalies a user shows now. Replaceable. */
export interface AnomalyDetector {
  count: (userId: string, now: Date) => Promise<number>
}

const MINUTE = 60 * 1000
const DAY = 24 * 60 * MINUTE

/**
 * The default (docs/api.md, "Zero-trust access check"): one anomaly each for 3 or more failed
 * sign-ins in the last 15 minutes, a refresh-token reuse in the last 24 hours, and a lockout in
 * the last 24 hours.
 */
export class RecentSecurityEventsDetector implements AnomalyDetector {
  constructor (private readonly failures: SignInFailuresRepository, private readonly sessions: SessionsRepository) {}

  async count (userId: string, now: Date): Promise<number> {
    const ago = (ms: number) => new Date(now.getTime() - ms).toISOString()
    const [failures, reuses, lockouts] = await Promise.all([
      this.failures.countAll(userId, ago(15 * MINUTE)),
      this.sessions.reusesSince(userId, ago(DAY)),
      this.failures.lockoutsSince(userId, ago(DAY))
    ])
    return Number(failures >= 3) + Number(reuses > 0) + Number(lockouts > 0)
  }
}
