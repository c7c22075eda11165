import { uuidv7 } from './ids.js'
import { type Db, atomically } from './types.js'

export interface TotpState {
  enabledAt: string | null
  secret: string | null
  pendingSecret: string | null
  lastStep: number | null
}

/** TOTP enrolment state and backup codes (secrets arrive sealed, codes hashed). */
export class MfaRepository {
  /** `changed` hears of every user whose MFA state changed (cached principals carry it). */
  constructor (private readonly db: Db, private readonly changed: (userId: string) => void = () => {}) {}

  async totpState (userId: string): Promise<TotpState | undefined> {
    const row = await this.db.selectFrom('users')
      .select(['totp_enabled_at', 'totp_secret', 'totp_pending_secret', 'totp_last_step'])
      .where('id', '=', userId).executeTakeFirst()
    if (row === undefined) return undefined
    return {
      enabledAt: row.totp_enabled_at,
      secret: row.totp_secret,
      pendingSecret: row.totp_pending_secret,
      lastStep: row.totp_last_step === null ? null : Number(row.totp_last_step)
    }
  }

  async setPendingSecret (userId: string, sealed: string): Promise<void> {
    await this.db.updateTable('users').set({ totp_pending_secret: sealed }).where('id', '=', userId).execute()
  }

  /**
   * Records `step` as the last accepted one, only if it is later than the one recorded:
   * of two requests with one code, exactly one gets true.
   */
  async acceptStep (userId: string, step: number): Promise<boolean> {
    const result = await this.db.updateTable('users').set({ totp_last_step: step })
      .where('id', '=', userId)
      .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Turns the pending secret on and stores the first set of backup codes, atomically. */
  async enable (
    userId: string,
    sealedSecret: string,
    codeHashes: string[],
    now: string,
    db: Db = this.db
  ): Promise<void> {
    await atomically(db, async (trx) => {
      await trx.updateTable('users')
        .set({ totp_secret: sealedSecret, totp_pending_secret: null, totp_enabled_at: now })
        .where('id', '=', userId).execute()
      await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', userId).execute()
      await trx.insertInto('mfa_backup_codes')
        .values(codeHashes.map((codeHash) => ({ id: uuidv7(), user_id: userId, code_hash: codeHash, created_at: now })))
        .execute()
    })
    this.changed(userId)
  }

  async disable (userId: string, db: Db = this.db): Promise<void> {
    await atomically(db, async (trx) => {
      await trx.updateTable('users')
        .set({ totp_secret: null, totp_pending_secret: null, totp_enabled_at: null, totp_last_step: null })
        .where('id', '=', userId).execute()
      await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', userId).execute()
    })
    this.changed(userId)
  }

  /** A fresh set replaces the old one, atomically. */
  async replaceBackupCodes (userId: string, codeHashes: string[], now: string, db: Db = this.db): Promise<void> {
    await atomically(db, async (trx) => {
      await trx.deleteFrom('mfa_backup_codes').where('user_id', '=', userId).execute()
      await trx.insertInto('mfa_backup_codes')
        .values(codeHashes.map((codeHash) => ({ id: uuidv7(), user_id: userId, code_hash: codeHash, created_at: now })))
        .execute()
    })
  }

  async backupCodes (userId: string): Promise<Array<{ id: string, code_hash: string }>> {
    return await this.db.selectFrom('mfa_backup_codes').select(['id', 'code_hash']).where('user_id', '=', userId).execute()
  }

  /** Spends one code; false when another request spent it first. */
  async consumeBackupCode (id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('mfa_backup_codes').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }

  /** Records a code sent by message for one challenge (its token's jti). */
  async addMessageCode (code: { userId: string, challengeJti: string, method: 'email' | 'sms', codeHash: string, expiresAt: string }, now: string): Promise<void> {
    await this.db.insertInto('mfa_message_codes').values({
      id: uuidv7(),
      user_id: code.userId,
      challenge_jti: code.challengeJti,
      method: code.method,
      code_hash: code.codeHash,
      created_at: now,
      expires_at: code.expiresAt,
      used_at: null
    }).execute()
  }

  /** The codes sent for a challenge, each with whether it may still be used at `now`. */
  async messageCodes (userId: string, challengeJti: string, now: string): Promise<Array<{ id: string, method: 'email' | 'sms', codeHash: string, usable: boolean }>> {
    const rows = await this.db.selectFrom('mfa_message_codes').select(['id', 'method', 'code_hash', 'expires_at', 'used_at'])
      .where('user_id', '=', userId).where('challenge_jti', '=', challengeJti).orderBy('created_at').execute()
    return rows.map((row) => ({
      id: row.id, method: row.method, codeHash: row.code_hash, usable: row.used_at === null && row.expires_at > now
    }))
  }

  /** Spends a code sent by message; false when it was used or expired meanwhile. */
  async spendMessageCode (id: string, now: string): Promise<boolean> {
    const result = await this.db.updateTable('mfa_message_codes').set({ used_at: now })
      .where('id', '=', id).where('used_at', 'is', null).where('expires_at', '>', now).executeTakeFirst()
    return result.numUpdatedRows > 0n
  }
}
