import { Errors } from '../../errors.js'
import type { AccountErasureRepository } from '../../store/account-erasure.js'
import type { UsersRepository } from '../../store/users.js'
import { eraseAccount } from '../accounts/index.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { InlineProof, ReauthenticationService } from '../sign-in/index.js'
import type { SessionService } from '../sessions/index.js'

const DAY_MS = 24 * 60 * 60 * 1000
/** Accounts erased per round of the background job. */
const ERASURE_BATCH = 100

/**
 * Deleting one's own account (docs/api.md, "Deleting one's account"), a sensitive change: at
 * once, or with ACCOUNT_DELETION_GRACE_DAYS, suspended now (its sessions end, no sign-in) and
 * erased when due by the background job; an administrator lifting the suspension cancels it.
 */
export class AccountDeletionService {
  readonly #now: () => number

  constructor (private readonly deps: {
    users: UsersRepository
    erasure: AccountErasureRepository
    sessions: SessionService
    reauthentication: ReauthenticationService
    audit: AuditTrail
    notices: Notices
    graceDays: number
    now?: () => number
  }) {
    this.#now = deps.now ?? Date.now
  }

  /** Deletes the caller's account, or schedules it: when it is due (null: done). */
  async deleteOwn (context: RequestContext, proof: InlineProof): Promise<{ deletion_due_at: string } | null> {
    const caller = callerOf(context)
    const { users, erasure, sessions, reauthentication, audit, notices, graceDays } = this.deps
    const user = await users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    await reauthentication.require(context, proof)
    if (graceDays === 0) {
      await audit.recordChange(context, async (trx) => {
        const erased = await eraseAccount(this.deps, user, trx)
        if (erased) await notices.add(user.email, 'account_deleted', trx)
        return erased
      }, (erased) => [{ event: 'user.deleted', outcome: 'success', targetId: user.id, details: { existed: erased } }])
      notices.deliver()
      return null
    }
    const now = this.#now()
    const dueAt = new Date(now + graceDays * DAY_MS).toISOString()
    const revokeAccess = await audit.recordChange(context, async (trx) => {
      const suspension = { reason: 'Deletion requested by the account holder', until: null, by: user.id }
      await users.suspend(user.id, suspension, new Date(now).toISOString(), trx)
      await erasure.schedule(user.id, dueAt, trx)
      await notices.add(user.email, 'account_deletion_scheduled', trx,
        `It will be deleted on ${dueAt}; until then it cannot be used. To keep it, ask an administrator to lift its suspension.`)
      return await sessions.endAllWithin(user.id, 'deletion_requested', trx)
    }, () => [{ event: 'user.deletion_scheduled', outcome: 'success', targetId: user.id, details: { due_at: dueAt } }])
    await revokeAccess()
    notices.deliver()
    return { deletion_due_at: dueAt }
  }

  /** Erases the accounts whose deletion is due at `now` (the background job); how many. */
  async eraseDue (now = this.#now()): Promise<number> {
    const { erasure, audit, notices } = this.deps
    const due = await erasure.due(new Date(now).toISOString(), ERASURE_BATCH)
    for (const user of due) {
      await audit.recordServiceChange(async (trx) => {
        const erased = await eraseAccount(this.deps, user, trx)
        if (erased) await notices.add(user.email, 'account_deleted', trx)
        return erased
      }, (erased) => erased ? [{ event: 'user.deleted', outcome: 'success', targetId: user.id, details: { existed: true, scheduled: true } }] : [])
    }
    if (due.length > 0) notices.deliver()
    return due.length
  }
}
