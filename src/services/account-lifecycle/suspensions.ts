import type { Suspension, SuspensionCreate } from '../../../schemas/suspension.js'
import { Errors } from '../../errors.js'
import { suspensionInForce } from '../../security/suspension.js'
import type { UsersRepository } from '../../store/users.js'
import { assertMayManage } from '../accounts/index.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import type { SessionService } from '../sessions/index.js'

/**
 * Suspending accounts (docs/api.md, "Suspension"): a suspended account cannot sign in by any
 * path, and its sessions end, with their access tokens, on every instance, as the suspension is
 * stored. The route needs `manage_users`; this service keeps the rank rule of roles (nobody
 * suspends an account holding a permission they lack) and refuses one's own.
 */
export class SuspensionService {
  readonly #now: () => number

  constructor (private readonly deps: {
    users: UsersRepository, sessions: SessionService, audit: AuditTrail, now?: () => number
  }) {
    this.#now = deps.now ?? Date.now
  }

  async suspend (context: RequestContext, userId: string, { reason, until }: SuspensionCreate): Promise<Suspension> {
    const caller = callerOf(context)
    const { users, sessions, audit } = this.deps
    const now = this.#now()
    if (caller.id === userId) throw new Errors.CONFLICT('An account cannot suspend itself')
    const end = until === undefined ? null : new Date(until)
    if (end !== null && end.getTime() <= now) throw new Errors.CONFLICT('A suspension ends in the future')
    await assertMayManage(this.deps.users, callerOf(context), userId)
    const { suspension, revokeAccess } = await audit.recordChange(context, async (trx) => {
      const given = { reason, until: end?.toISOString() ?? null, by: caller.id }
      const suspension = await users.suspend(userId, given, new Date(now).toISOString(), trx)
      if (suspension === undefined) return { suspension }
      return { suspension, revokeAccess: await sessions.endAllWithin(userId, 'suspended', trx) }
    }, ({ suspension }) => suspension === undefined
      ? []
      : [{ event: 'user.suspended', outcome: 'success', targetId: userId, details: { reason, until: suspension.until } }])
    if (suspension === undefined) throw new Errors.NOT_FOUND('User')
    await revokeAccess?.()
    return suspension
  }

  /** The user's suspension in force (when it began and ends, null: when lifted), or null. */
  async inForce (userId: string): Promise<{ at: string, until: string | null } | null> {
    const principal = await this.deps.users.findPrincipal(userId)
    if (principal === undefined) throw new Errors.NOT_FOUND('User')
    return suspensionInForce(principal, this.#now()) === undefined ? null : principal.suspension
  }

  /** Lifts a suspension, in force or past; lifting none succeeds too. */
  async lift (context: RequestContext, userId: string): Promise<void> {
    await assertMayManage(this.deps.users, callerOf(context), userId)
    await this.deps.audit.recordChange(context, async (trx) => await this.deps.users.liftSuspension(userId, trx),
      (lifted) => lifted ? [{ event: 'user.suspension_lifted', outcome: 'success', targetId: userId }] : [])
  }
}
