import { atomically, type AuthorizationServerKeysTable, type Db } from './types.js'

export type AuthorizationServerKeyRow = AuthorizationServerKeysTable

/**
 * The keys the authorization server signs ID tokens with (docs/operations.md, "ID-token keys"),
 * a few rows read at start-up and by the rotation commands.
 */
export class AuthorizationServerKeysRepository {
  constructor (private readonly db: Db) {}

  /** Every key, the newest generation first. */
  async list (): Promise<AuthorizationServerKeyRow[]> {
    return await this.db.selectFrom('authorization_server_keys').selectAll()
      .orderBy('generation', 'desc').orderBy('algorithm').execute()
  }

  /** Adds a generation; a generation another instance added first is kept as it is. */
  async addGeneration (rows: AuthorizationServerKeyRow[]): Promise<void> {
    await this.db.insertInto('authorization_server_keys').values(rows)
      .onConflict((conflict) => conflict.columns(['generation', 'algorithm']).doNothing())
      .execute()
  }

  /**
   * The staged generation `generation` signs from now on; the one that signed until now retires
   * (stays published). Answers whether there was such a staged generation.
   */
  async activate (generation: number): Promise<boolean> {
    return await atomically(this.db, async (trx) => {
      const staged = await trx.updateTable('authorization_server_keys').set({ status: 'signing' })
        .where('generation', '=', generation).where('status', '=', 'staged').executeTakeFirst()
      if (staged.numUpdatedRows === 0n) return false
      await trx.updateTable('authorization_server_keys').set({ status: 'retiring' })
        .where('status', '=', 'signing').where('generation', '<>', generation).execute()
      return true
    })
  }

  /** Removes the retiring generations; answers how many keys went. */
  async removeRetiring (): Promise<number> {
    const removed = await this.db.deleteFrom('authorization_server_keys').where('status', '=', 'retiring').executeTakeFirst()
    return Number(removed.numDeletedRows)
  }

  async remove (kids: string[]): Promise<void> {
    await this.db.deleteFrom('authorization_server_keys').where('kid', 'in', kids).execute()
  }
}
