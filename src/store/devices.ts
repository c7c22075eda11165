import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { canonicalUuid, uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { type Db, type TrustedDevicesTable, atomically } from './types.js'
import { holdUserRow } from './users.js'

/** At most this many trusted devices per user (docs/api.md, "Trusted devices"). */
export const MAX_DEVICES_PER_USER = 5

export type TrustedDevice = Omit<TrustedDevicesTable, 'user_id'>
const COLUMNS = ['id', 'device_id', 'name', 'created_at'] as const

export class DevicesRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    this.#pages = new PageQueries<TrustedDevice, { userId: string }>(({ userId }) =>
      db.selectFrom('trusted_devices').where('user_id', '=', userId), COLUMNS, pages, {
      // A user trusts at most 5 devices: a search reads those through the user's index, no more.
      searchIn: ['name']
    })
  }

  /**
   * Trusts a device; the sixth is StoreConflict 'device_limit'. The count and the insert share
   * a transaction that first locks the user's row (a no-op update): on PostgreSQL, whose
   * transactions here read committed data statement by statement, two concurrent adds would
   * otherwise both count five and both insert. The unique (user, device) index refuses the same
   * device twice ('device_trusted').
   */
  async add (userId: string, deviceId: string, name: string, db: Db = this.db): Promise<TrustedDevice> {
    const device = { id: uuidv7(), device_id: deviceId, name, created_at: new Date().toISOString() }
    try {
      await atomically(db, async (trx) => {
        await holdUserRow(trx, userId)
        const { count } = await trx.selectFrom('trusted_devices').select((eb) => eb.fn.countAll().as('count'))
          .where('user_id', '=', userId).executeTakeFirstOrThrow()
        if (Number(count) >= MAX_DEVICES_PER_USER) throw new StoreConflict('device_limit', MAX_DEVICES_PER_USER)
        await trx.insertInto('trusted_devices').values({ ...device, user_id: userId }).execute()
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('device_trusted')
      throw error
    }
    return device
  }

  /**
   * Removes by record id (a UUID, in any spelling) or device_id (the client's own text, as
   * given); false when there was none.
   */
  async remove (userId: string, idOrDeviceId: string, db: Db = this.db): Promise<boolean> {
    const result = await db.deleteFrom('trusted_devices')
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('id', '=', canonicalUuid(idOrDeviceId)), eb('device_id', '=', idOrDeviceId)]))
      .executeTakeFirst()
    return result.numDeletedRows > 0n
  }

  async isTrusted (userId: string, deviceId: string): Promise<boolean> {
    const row = await this.db.selectFrom('trusted_devices').select('id')
      .where('user_id', '=', userId).where('device_id', '=', deviceId).executeTakeFirst()
    return row !== undefined
  }

  async list (userId: string, request: CollectionRequest): Promise<CollectionResult<TrustedDevice>> {
    return await this.#pages.run(request, { userId })
  }

  /** Up to `limit` of the user's trusted devices, newest first (an account's export, docs/api.md, "Account export"). */
  async latestOf (userId: string, limit: number): Promise<TrustedDevice[]> {
    return await this.db.selectFrom('trusted_devices').select(COLUMNS)
      .where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  }
}
