import { Errors } from '../../errors.js'
import type { Db } from '../../store/types.js'
import type { UsersRepository } from '../../store/users.js'
import type { OutboxRepository } from '../../store/outbox.js'
import type { Recorded } from '../audit/index.js'
import type { MessageTemplates, NoticeKind } from './templates.js'

/**
 * Security notices (a new password, an e-mail change, a second factor turned on or off, a new
 * passkey) to the account's address. A notice is stored in the outbox in the transaction of
 * the change it tells of, so one is never kept without the other, and delivered once that
 * transaction is committed.
 */
export class Notices {
  constructor (private readonly deps: {
    outbox: OutboxRepository, templates: MessageTemplates, deliver: () => void, now?: () => number
  }) {}

  /**
   * Stores the notice on `db`, the change's transaction, due at `dueAt` (at once by default);
   * `deliver` once it is committed.
   */
  async add (to: string, kind: NoticeKind, db: Db, detail?: string, dueAt?: string): Promise<void> {
    const now = new Date((this.deps.now ?? Date.now)()).toISOString()
    await this.deps.outbox.add(this.deps.templates.notice(to, kind, detail), now, db, dueAt ?? now)
  }

  /** Starts delivering what was stored. */
  deliver (): void {
    this.deps.deliver()
  }

  /**
   * `with`, to the current address of the account `userId`: a change
   * its holder should know of, made by whoever holds a token.
   */
  async toAccount (users: UsersRepository, userId: string, kind: NoticeKind, recorded: Recorded): Promise<Recorded> {
    const user = await users.findById(userId)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return this.with(recorded, user.email, kind)
  }

  /**
   * `recorded`, with the notice stored in the change's transaction when the change is recorded, and delivered after.
   */
  with (recorded: Recorded, to: string, kind: NoticeKind): Recorded {
    return async (change, recordedIf = () => true) => {
      const result = await recorded(async (trx) => {
        const changed = await change(trx)
        if (recordedIf(changed)) await this.add(to, kind, trx)
        return changed
      }, recordedIf)
      if (recordedIf(result)) this.deliver()
      return result
    }
  }
}
