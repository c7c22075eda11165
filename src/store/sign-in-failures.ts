import { isForeignKeyViolation } from './errors.js'
import { uuidv7 } from './ids.js'
import type { Db } from './types.js'

/** Failed sign-ins and the lockouts they caused (CONTRACT section 3 brute-force rule). */
export class SignInFailuresRepository {
  constructor (private readonly db: Db) {}

  /**
   * Records a failure and deletes the account's failures older than `keepSince`, which no rule
   * looks at. An account deleted meanwhile has nothing left to count against.
   */
  async record (userId: string, address: string, now: string, keepSince: string): Promise<void> {
    try {
      await this.db.insertInto('sign_in_failures').values({ id: uuidv7(), user_id: userId, ip: address, created_at: now, cleared_at: null }).execute()
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error
    }
    await this.db.deleteFrom('sign_in_failures').where('user_id', '=', userId).where('created_at', '<', keepSince).execute()
  }

  /** Failures since `since` that still count for the lockout: from one address, and from all. */
  async count (userId: string, address: string, since: string): Promise<{ fromAddress: number, total: number }> {
    const rows = await this.db.selectFrom('sign_in_failures')
      .select(['ip', (eb) => eb.fn.countAll().as('count')])
      .where('user_id', '=', userId).where('created_at', '>', since).where('cleared_at', 'is', null)
      .groupBy('ip')
      .execute()
    const counts = rows.map((row) => ({ ip: row.ip, count: Number(row.count) }))
    return {
      fromAddress: counts.find((row) => row.ip === address)?.count ?? 0,
      total: counts.reduce((sum, row) => sum + row.count, 0)
    }
  }

  /** Every failure since `since`, cleared or not: what the anomaly detector counts. */
  async countAll (userId: string, since: string): Promise<number> {
    const row = await this.db.selectFrom('sign_in_failures').select((eb) => eb.fn.countAll().as('count'))
      .where('user_id', '=', userId).where('created_at', '>', since).executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /** After a successful sign-in from the address, its failures stop counting for the lockout. */
  async clear (userId: string, address: string, now: string): Promise<void> {
    await this.db.updateTable('sign_in_failures').set({ cleared_at: now })
      .where('user_id', '=', userId).where('ip', '=', address).where('cleared_at', 'is', null).execute()
  }

  /** `address` null locks the account for every address. */
  async lock (userId: string, address: string | null, now: string, until: string): Promise<void> {
    await this.db.insertInto('lockouts').values({ id: uuidv7(), user_id: userId, ip: address, created_at: now, locked_until: until }).execute()
  }

  /** Lockouts of the account that began after `since`. */
  async lockoutsSince (userId: string, since: string): Promise<number> {
    const row = await this.db.selectFrom('lockouts').select((eb) => eb.fn.countAll().as('count'))
      .where('user_id', '=', userId).where('created_at', '>', since).executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /** The end of the lockout that applies to this address now, if any. */
  async lockedUntil (userId: string, address: string, now: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('lockouts')
      .select((eb) => eb.fn.max('locked_until').as('until'))
      .where('user_id', '=', userId)
      .where('locked_until', '>', now)
      .where((eb) => eb.or([eb('ip', 'is', null), eb('ip', '=', address)]))
      .executeTakeFirst()
    return row?.until ?? undefined
  }
}
