import type { Db } from './types.js'

/** Links between external identities (provider, subject) and users. */
export class IdentitiesRepository {
  constructor (private readonly db: Db) {}

  async userOf (provider: string, subject: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('user_identities').select('user_id')
      .where('provider', '=', provider).where('subject', '=', subject).executeTakeFirst()
    return row?.user_id
  }

  /** Links; an identity linked already (a concurrent first sign-in) keeps its first user. */
  async link (provider: string, subject: string, userId: string, email: string | null): Promise<void> {
    await this.db.insertInto('user_identities')
      .values({ provider, subject, user_id: userId, email, created_at: new Date().toISOString() })
      .onConflict((conflict) => conflict.columns(['provider', 'subject']).doNothing())
      .execute()
  }
}
