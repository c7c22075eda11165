import type { IssuedRefreshToken } from '../security/tokens.js'
import type { Db } from './types.js'

export interface NewRefreshToken {
  userId: string
  sessionId: string
  issued: IssuedRefreshToken
  device: Record<string, unknown>
}

/** Refresh tokens are kept only as SHA-256 hashes (CONTRACT section 3). */
export class RefreshTokensRepository {
  constructor (private readonly db: Db) {}

  async insert ({ userId, sessionId, issued, device }: NewRefreshToken): Promise<void> {
    await this.db.insertInto('refresh_tokens').values({
      jti: issued.jti,
      session_id: sessionId,
      user_id: userId,
      token_hash: issued.token_hash,
      device: JSON.stringify(device),
      created_at: new Date().toISOString(),
      expires_at: issued.expires_at.toISOString(),
      spent_at: null,
      revoked_at: null
    }).execute()
  }

  /** Ends every session of the user (after a password change). */
  async revokeAllForUser (userId: string): Promise<void> {
    await this.db.updateTable('refresh_tokens')
      .set({ revoked_at: new Date().toISOString() })
      .where('user_id', '=', userId)
      .where('revoked_at', 'is', null)
      .execute()
  }
}
