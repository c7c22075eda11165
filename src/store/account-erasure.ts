import { erasedPayload, withoutAddress } from '../security/redaction.js'
import type { AuthorizationArtifactsRepository } from './authorization-artifacts.js'
import type { Db } from './types.js'
import { holdUserRow } from './users.js'

/** Audit entries whose deliveries are looked up in one query. */
const ENTRIES_PER_QUERY = 500

/**
 * Erasing an account (docs/api.md, "Deleting one's account"): its row goes (UsersRepository),
 * and with it (foreign keys) its sessions, tokens, factors, passkeys, identities, devices,
 * memberships, posts and comments; what refers to it elsewhere keeps the id and loses its
 * personal data (here).
 */
export class AccountErasureRepository {
  constructor (private readonly db: Db, private readonly artifacts: Pick<AuthorizationArtifactsRepository, 'endAccount'>) {}

  /** Schedules the erasure of an account at `dueAt`. */
  async schedule (userId: string, dueAt: string, db: Db = this.db): Promise<void> {
    await db.updateTable('users').set({ deletion_due_at: dueAt }).where('id', '=', userId).execute()
  }

  /** Accounts whose erasure is due at `now`, earliest first. */
  async due (now: string, limit: number): Promise<Array<{ id: string, email: string }>> {
    return await this.db.selectFrom('users').select(['id', 'email'])
      .where('deletion_due_at', 'is not', null).where('deletion_due_at', '<=', now)
      .orderBy('deletion_due_at').orderBy('id').limit(limit).execute()
  }

  /**
   * What the account leaves outside its row, before the row is deleted: its audit entries (as
   * actor or target) keep the id and lose the address, client address and user agent, and so
   * do the webhook deliveries made of them (sent or waiting);
   * messages waiting for the address and invitations to it go, and whatever the authorization
   * server holds for it. The account's row is held first, so that erasures of one account at
   * once (two deletes, on two instances) run one after another rather than deadlock on its
   * audit entries; the later ones find it gone, touch nothing and answer false.
   */
  async eraseTraces (user: { id: string, email: string }, db: Db = this.db): Promise<boolean> {
    if (!await holdUserRow(db, user.id)) return false
    for (const column of ['actor_id', 'target_id'] as const) {
      const entries = await db.selectFrom('audit_logs').select(['id', 'details']).where(column, '=', user.id).execute()
      for (const entry of entries) {
        const details = JSON.stringify(withoutAddress(JSON.parse(entry.details), user.email))
        if (details !== entry.details) await db.updateTable('audit_logs').set({ details }).where('id', '=', entry.id).execute()
      }
      await db.updateTable('audit_logs').set({ ip: null, user_agent: null }).where(column, '=', user.id).execute()
      // The webhook deliveries of those entries, sent or not yet: none leaves with the address after this.
      for (let start = 0; start < entries.length; start += ENTRIES_PER_QUERY) {
        const ids = entries.slice(start, start + ENTRIES_PER_QUERY).map((entry) => entry.id)
        const deliveries = await db.selectFrom('webhook_deliveries').select(['id', 'payload']).where('audit_log_id', 'in', ids).execute()
        for (const delivery of deliveries) {
          const payload = erasedPayload(delivery.payload, user.email)
          if (payload !== delivery.payload) await db.updateTable('webhook_deliveries').set({ payload }).where('id', '=', delivery.id).execute()
        }
      }
    }
    await db.deleteFrom('outbox').where('recipient', '=', user.email).execute()
    await db.deleteFrom('organization_invitations').where('email', '=', user.email).execute()
    // Sign-ins by e-mail to the address (those of the account go with it; one that made it names no account).
    await db.deleteFrom('email_sign_ins').where('email', '=', user.email).execute()
    // The authorization server's sessions, consents and tokens name the account by id, without a foreign key.
    await this.artifacts.endAccount(user.id, db)
    return true
  }
}
