import { isForeignKeyViolation } from './errors.js'
import { uuidv7 } from './ids.js'
import type { Db } from './types.js'

/** Failed sign-ins and the lockouts they caused (CONTRACT section 3 brute-force rule). */
export class SignInFailuresRepository {
  constructor (private readonly db: Db) {}

  /** An account deleted meanwhile has nothing left to count against. */
  async record (userId: string, address: string, now: string): Promise<void> {
    try {
      await this.db.insertInto('sign_in_failures').values({ id: uuidv7(), user_id: userId, ip: address, created_at: now }).execute()
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error
    }
  }

  /** Failures since `since`: from one address, and from all. */
  async count (userId: string, address: string, since: string): Promise<{ fromAddress: number, total: number }> {
    const rows = await this.db.selectFrom('sign_in_failures')
      .select(['ip', (eb) => eb.fn.countAll().as('count')])
      .where('user_id', '=', userId).where('created_at', '>', since)
      .groupBy('ip')
      .execute()
    const counts = rows.map((row) => ({ ip: row.ip, count: Number(row.count) }))
    return {
      fromAddress: counts.find((row) => row.ip === address)?.count ?? 0,
      total: counts.reduce((sum, row) => sum + row.count, 0)
    }
  }

  /** Forgets an address's failures after a successful sign-in from it. */
  async clear (userId: string, address: string): Promise<void> {
    await this.db.deleteFrom('sign_in_failures').where('user_id', '=', userId).where('ip', '=', address).execute()
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
