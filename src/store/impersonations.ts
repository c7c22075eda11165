import type { Impersonation } from '../../schemas/impersonation.js'
import type { SessionAccessToken } from './sessions.js'
import type { Db, ImpersonationsTable } from './types.js'
import { holdUserRow } from './users.js'

function impersonationOf (row: ImpersonationsTable): Impersonation {
  return {
    id: row.id,
    user_id: row.user_id,
    impersonator_id: row.impersonator_id ?? '',
    reason: row.reason,
    created_at: row.created_at,
    expires_at: row.expires_at
  }
}

/** Impersonations (docs/api.md, "Impersonation"), each with its one access token. */
export class ImpersonationsRepository {
  constructor (private readonly db: Db) {}

  /**
   * Stores the impersonation, within `trx`, while the administrator's session it is begun from is
   * live: undefined once that session has ended (its revocation may not have reached this
   * instance yet). That session's row and the user's are held until `trx` ends, so that ending
   * the session or the user's sessions at the same time runs after it, and finds its token.
   */
  async create (
    row: ImpersonationsTable & { impersonator_session_id: string },
    trx: Db
  ): Promise<Impersonation | undefined> {
    // A no-op update holds the row (SQLite has no FOR UPDATE); `device` is in no index.
    const held = await trx.updateTable('sessions').set((eb) => ({ device: eb.ref('device') }))
      .where('id', '=', row.impersonator_session_id).where('revoked_at', 'is', null).executeTakeFirst()
    if (held.numUpdatedRows === 0n) return undefined
    await holdUserRow(trx, row.user_id)
    await trx.insertInto('impersonations').values(row).execute()
    return impersonationOf(row)
  }

  /** The access tokens of the user's impersonations unexpired at `now`, to revoke with the user's sessions. */
  async accessTokens (userId: string, now: string, db: Db = this.db): Promise<SessionAccessToken[]> {
    const rows = await db.selectFrom('impersonations').select(['access_jti', 'created_at'])
      .where('user_id', '=', userId).where('expires_at', '>', now).execute()
    return rows.map((row) => ({ jti: row.access_jti, issuedAt: row.created_at }))
  }
}
