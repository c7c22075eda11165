import type { Impersonation } from '../../schemas/impersonation.js'
import type { SessionAccessToken } from './sessions.js'
import type { Db, ImpersonationsTable } from './types.js'

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

  async create (row: ImpersonationsTable, db: Db = this.db): Promise<Impersonation> {
    await db.insertInto('impersonations').values(row).execute()
    return impersonationOf(row)
  }

  /** The access tokens of the user's impersonations unexpired at `now`, to revoke with the user's sessions. */
  async accessTokens (userId: string, now: string, db: Db = this.db): Promise<SessionAccessToken[]> {
    const rows = await db.selectFrom('impersonations').select(['access_jti', 'created_at'])
      .where('user_id', '=', userId).where('expires_at', '>', now).execute()
    return rows.map((row) => ({ jti: row.access_jti, issuedAt: row.created_at }))
  }
}
