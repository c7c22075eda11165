import type { LockoutScope } from '../security/lockout.js'
import { countValuesUpTo } from './bounded-count.js'
import { uuidv7 } from './ids.js'
import { prepare, type ReadRows } from './prepared.js'
import type { Db } from './types.js'
import { holdUserRow } from './users.js'

export interface FailureCounts { fromAddress: number, total: number }

/** The instants a failure is recorded against, as ISO strings. */
export interface FailureTimes {
  now: string
  /** Failures after this count toward the lockout. */
  countSince: string
  /** Failures before this are deleted: no rule looks at them. */
  keepSince: string
  /** The end of a lockout begun now. */
  lockUntil: string
}

/** Failed sign-ins and the lockouts they caused (docs/api.md, "Brute-force lockout"). */
export class SignInFailuresRepository {
  /** Every password and code check reads the lock, twice (SignInGuard): prepared. */
  readonly #selectLockedUntil

  constructor (private readonly db: Db, readRows: ReadRows) {
    this.#selectLockedUntil = prepare(readRows, lockedUntilQuery(db, '', '', ''))
  }

  /**
   * Records a failed attempt at the account's secret, in one transaction holding the account's
   * row, so that failures on one account are counted one after another. Answers true when a
   * lockout already covers the address: the failure is then not counted. Otherwise it is
   * recorded (unless the account is gone: nothing left to count against), the account's
   * failures older than `keepSince` are deleted, and the lock `lockFor` calls for is begun.
   */
  async recordFailure (
    userId: string,
    address: string,
    times: FailureTimes,
    lockFor: (counted: FailureCounts) => LockoutScope | null
  ): Promise<boolean> {
    return await this.db.transaction().execute(async (trx) => {
      const exists = await holdUserRow(trx, userId)
      const lock = await lockedUntilQuery(trx, userId, times.now, address).executeTakeFirst()
      if ((lock?.until ?? null) !== null) return true
      if (!exists) return false
      await trx.insertInto('sign_in_failures').values({ id: uuidv7(), user_id: userId, ip: address, created_at: times.now, cleared_at: null }).execute()
      await trx.deleteFrom('sign_in_failures').where('user_id', '=', userId).where('created_at', '<', times.keepSince).execute()
      const scope = lockFor(await countFailures(trx, userId, address, times.countSince))
      if (scope !== null) {
        await trx.insertInto('lockouts').values({ id: uuidv7(), user_id: userId, ip: scope === 'account' ? null : address, created_at: times.now, locked_until: times.lockUntil }).execute()
      }
      return false
    })
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

  /** Lockouts of the account that began after `since`. */
  async lockoutsSince (userId: string, since: string): Promise<number> {
    const row = await this.db.selectFrom('lockouts').select((eb) => eb.fn.countAll().as('count'))
      .where('user_id', '=', userId).where('created_at', '>', since).executeTakeFirstOrThrow()
    return Number(row.count)
  }

  /** The accounts under a lockout at `now` (for every address or for one), among the first `cap` lockouts in force. */
  async countLockedAccounts (now: string, cap: number): Promise<number> {
    return await countValuesUpTo(this.db, this.db.selectFrom('lockouts').select('user_id as value').where('locked_until', '>', now), cap)
  }

  /** The end of the lockout that applies to this address now, if any. */
  async lockedUntil (userId: string, address: string, now: string): Promise<string | undefined> {
    const [row] = await this.#selectLockedUntil(userId, now, address)
    return row?.until ?? undefined
  }
}

/** Failures since `since` that still count for the lockout: from one address, and from all. */
async function countFailures (db: Db, userId: string, address: string, since: string): Promise<FailureCounts> {
  const rows = await db.selectFrom('sign_in_failures')
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

/** The lock that covers the address now; its parameters in the order of its placeholders, for prepare(). */
function lockedUntilQuery (db: Db, userId: string, now: string, address: string) {
  return db.selectFrom('lockouts')
    .select((eb) => eb.fn.max('locked_until').as('until'))
    .where('user_id', '=', userId)
    .where('locked_until', '>', now)
    .where((eb) => eb.or([eb('ip', 'is', null), eb('ip', '=', address)]))
}
