import type { ExportIdentity } from '../../schemas/account-export.js'
import type { Identity } from '../../schemas/auth.js'
import { uuidv7 } from './ids.js'
import { type Db, atomically } from './types.js'
import { canSignInWithout, holdUserRow } from './users.js'

/** Links between external identities (provider, subject) and users. */
export class IdentitiesRepository {
  constructor (private readonly db: Db) {}

  async userOf (provider: string, subject: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('user_identities').select('user_id')
      .where('provider', '=', provider).where('subject', '=', subject).executeTakeFirst()
    return row?.user_id
  }

  /** Links; an identity linked already (a concurrent first sign-in) keeps its first user. */
  async link (
    provider: string,
    subject: string,
    userId: string,
    email: string | null,
    db: Db = this.db
  ): Promise<void> {
    await db.insertInto('user_identities')
      .values({ id: uuidv7(), provider, subject, user_id: userId, email, created_at: new Date().toISOString() })
      .onConflict((conflict) => conflict.columns(['provider', 'subject']).doNothing())
      .execute()
  }

  /** A user's identities, oldest first (a user has a handful at most). */
  async listFor (userId: string): Promise<Identity[]> {
    return await this.db.selectFrom('user_identities').select(['id', 'provider', 'created_at'])
      .where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()
  }

  /**
   * Up to `limit` of a user's identities, newest first, with the provider's subject and the
   * address it gave (an account's export, docs/api.md, "Account export"); never a provider's token.
   */
  async linkedTo (userId: string, limit: number): Promise<ExportIdentity[]> {
    return await this.db.selectFrom('user_identities').select(['id', 'provider', 'subject', 'email', 'created_at'])
      .where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  }

  /**
   * Removes one of the user's identities, unless it is the account's last way to sign in (its
   * only identity, and no password or passkey). One transaction holding the user's row: two concurrent
   * unlinks of an account's last two identities run one after another, and the second sees
   * the first's.
   */
  async unlinkUnlessLast (userId: string, id: string, db: Db = this.db): Promise<{ unlinked: Identity } | 'not_found' | 'last'> {
    return await atomically(db, async (trx) => {
      if (!await holdUserRow(trx, userId)) return 'not_found'
      const linked = await trx.selectFrom('user_identities').select(['id', 'provider', 'created_at']).where('user_id', '=', userId).execute()
      const identity = linked.find((candidate) => candidate.id === id)
      if (identity === undefined) return 'not_found'
      if (linked.length === 1 && !await canSignInWithout(trx, userId, 'user_identities')) return 'last'
      await trx.deleteFrom('user_identities').where('id', '=', id).where('user_id', '=', userId).execute()
      return { unlinked: identity }
    })
  }
}
