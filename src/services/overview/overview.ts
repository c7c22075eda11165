import { type Overview, OVERVIEW_COUNT_CAP } from '../../../schemas/overview.js'
import { Errors } from '../../errors.js'
import { hasPermission } from '../../security/permissions.js'
import type { AuditLogsRepository } from '../../store/audit-logs.js'
import type { OutboxRepository } from '../../store/outbox.js'
import type { SignInFailuresRepository } from '../../store/sign-in-failures.js'
import type { WebhooksRepository } from '../../store/webhooks.js'
import { callerOf, type RequestContext } from '../context.js'

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * What an operator checks first (docs/api.md, "Overview"): the last day's sign-ins and failures
 * and the accounts locked now, to readers of the audit log; the webhooks' health and the
 * outbox's backlog besides, to holders of `admin`. Every count is bounded, so the read costs
 * the same at any size.
 */
export class OverviewService {
  readonly #now: () => number

  constructor (private readonly deps: {
    auditLogs: AuditLogsRepository
    signInFailures: SignInFailuresRepository
    webhooks: WebhooksRepository
    outbox: OutboxRepository
    now?: () => number
  }) {
    this.#now = deps.now ?? Date.now
  }

  async read (context: RequestContext): Promise<Overview> {
    const caller = callerOf(context)
    if (!hasPermission(caller, 'view_audit_logs')) throw new Errors.FORBIDDEN('view_audit_logs')
    const { auditLogs, signInFailures, webhooks, outbox } = this.deps
    const nowMs = this.#now()
    const at = new Date(nowMs).toISOString()
    const since = new Date(nowMs - DAY_MS).toISOString()
    const cap = OVERVIEW_COUNT_CAP
    const operations = hasPermission(caller, 'admin')
    const [logins, providerLogins, failed, secondFactorFailed, lockedAccounts, health, backlog] = await Promise.all([
      auditLogs.countSince('auth.login', since, cap),
      auditLogs.countSince('auth.oauth_login', since, cap),
      auditLogs.countSince('auth.login_failed', since, cap),
      auditLogs.countSince('auth.mfa_failed', since, cap),
      signInFailures.countLockedAccounts(at, cap),
      operations ? webhooks.health(at, cap) : null,
      operations ? outbox.overdue(at, cap) : null
    ])
    return {
      at,
      since,
      sign_ins: { succeeded: Math.min(cap, logins + providerLogins), failed, second_factor_failed: secondFactorFailed },
      locked_accounts: lockedAccounts,
      webhooks: health === null
        ? null
        : {
            endpoints_disabled: health.endpointsDisabled,
            endpoints_retrying: health.endpointsRetrying,
            deliveries_retrying: health.retries,
            deliveries_overdue: health.overdue
          },
      outbox: backlog === null ? null : { overdue: backlog.count, due_since: backlog.dueSince }
    }
  }
}
