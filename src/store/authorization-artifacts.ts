import type { AuthorizationArtifactsTable, Db } from './types.js'

/** What an artifact is looked up or ended by, besides its model and id. */
export type ArtifactKeys = Pick<AuthorizationArtifactsTable, 'grant_id' | 'user_code' | 'uid' | 'account_id' | 'client_id' | 'expires_at'>

/** A remembered consent: the grant of one account to one client. */
export interface StoredGrant { id: string, clientId: string, payload: string, organizationId: string | null }

/**
 * The authorization server's objects (docs/api.md, "Authorization server"): sessions,
 * interactions, grants, codes and tokens of oidc-provider, each a JSON payload. An expired one
 * is never read; the purge removes it.
 */
export class AuthorizationArtifactsRepository {
  constructor (private readonly db: Db) {}

  async upsert (model: string, id: string, payload: string, keys: ArtifactKeys): Promise<void> {
    await this.db.insertInto('authorization_artifacts').values({ model, id, payload, ...keys })
      .onConflict((conflict) => conflict.columns(['model', 'id']).doUpdateSet({ payload, ...keys }))
      .execute()
  }

  async find (model: string, id: string, now: string): Promise<string | undefined> {
    const row = await this.#live(now).where('model', '=', model).where('id', '=', id).executeTakeFirst()
    return row?.payload
  }

  async findByUserCode (model: string, userCode: string, now: string): Promise<string | undefined> {
    const row = await this.#live(now).where('model', '=', model).where('user_code', '=', userCode).executeTakeFirst()
    return row?.payload
  }

  async findByUid (model: string, uid: string, now: string): Promise<string | undefined> {
    const row = await this.#live(now).where('model', '=', model).where('uid', '=', uid).executeTakeFirst()
    return row?.payload
  }

  /** Marks a code or token used, in its payload (where oidc-provider reads it), once. */
  async consume (model: string, id: string, consumedAt: number): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('authorization_artifacts').select('payload')
        .where('model', '=', model).where('id', '=', id).executeTakeFirst()
      if (row === undefined) return
      const payload = JSON.stringify({ ...JSON.parse(row.payload), consumed: consumedAt })
      await trx.updateTable('authorization_artifacts').set({ payload }).where('model', '=', model).where('id', '=', id).execute()
    })
  }

  async destroy (model: string, id: string): Promise<void> {
    await this.db.deleteFrom('authorization_artifacts').where('model', '=', model).where('id', '=', id).execute()
  }

  /** Everything a grant gave: its codes and tokens (the grant itself has its own id). */
  async revokeByGrantId (grantId: string): Promise<void> {
    await this.db.deleteFrom('authorization_artifacts').where('grant_id', '=', grantId).execute()
  }

  /** The account's remembered consents, one per client, unexpired at `now`. */
  async grantsOf (accountId: string, now: string): Promise<StoredGrant[]> {
    // An account has a handful: sorted here, so the account's index serves the query alone.
    const rows = await this.#live(now).select(['id', 'client_id', 'organization_id'])
      .where('account_id', '=', accountId).where('model', '=', 'Grant').execute()
    return rows.map((row) => ({ id: row.id, clientId: row.client_id ?? '', payload: row.payload, organizationId: row.organization_id }))
      .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  }

  /** The account's consent to one client, the newest when there are several. */
  async grantFor (accountId: string, clientId: string, now: string): Promise<StoredGrant | undefined> {
    return (await this.grantsOf(accountId, now)).find((grant) => grant.clientId === clientId)
  }

  /** Ends one consent of the account and what it gave; false when it has none of that id. */
  async revokeGrant (accountId: string, grantId: string, db: Db = this.db): Promise<boolean> {
    const deleted = await db.deleteFrom('authorization_artifacts')
      .where('model', '=', 'Grant').where('id', '=', grantId).where('account_id', '=', accountId).executeTakeFirst()
    if (deleted.numDeletedRows === 0n) return false
    await db.deleteFrom('authorization_artifacts').where('grant_id', '=', grantId).execute()
    return true
  }

  /**
   * Records the organization a consent chose for the `organization` scope; false when the account
   * gave no such consent.
   */
  async chooseOrganization (accountId: string, grantId: string, organizationId: string): Promise<boolean> {
    const chosen = await this.db.updateTable('authorization_artifacts').set({ organization_id: organizationId })
      .where('model', '=', 'Grant').where('id', '=', grantId).where('account_id', '=', accountId).executeTakeFirst()
    return chosen.numUpdatedRows > 0n
  }

  /** The organization the account's consent chose, if it did; by the grant's key. */
  async organizationOfGrant (accountId: string, grantId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('authorization_artifacts').select('organization_id')
      .where('model', '=', 'Grant').where('id', '=', grantId).where('account_id', '=', accountId).executeTakeFirst()
    return row?.organization_id ?? undefined
  }

  /**
   * Ends everything the authorization server holds for the account: its sessions there, its
   * consents, and every code and token they gave (with the account's other sessions, after a
   * new password, a claim, a suspension).
   */
  async endAccount (accountId: string, db: Db = this.db): Promise<void> {
    const grants = await db.selectFrom('authorization_artifacts').select('id')
      .where('account_id', '=', accountId).where('model', '=', 'Grant').execute()
    if (grants.length > 0) {
      await db.deleteFrom('authorization_artifacts').where('grant_id', 'in', grants.map((grant) => grant.id)).execute()
    }
    await db.deleteFrom('authorization_artifacts').where('account_id', '=', accountId).execute()
  }

  /** Removes artifacts expired before `now`, at most `limit`; answers how many. */
  async purgeExpired (now: string, limit: number): Promise<number> {
    const expired = await this.db.selectFrom('authorization_artifacts').select(['model', 'id'])
      .where('expires_at', '<', now).limit(limit).execute()
    let removed = 0
    for (const model of new Set(expired.map((row) => row.model))) {
      const ids = expired.filter((row) => row.model === model).map((row) => row.id)
      const deleted = await this.db.deleteFrom('authorization_artifacts').where('model', '=', model).where('id', 'in', ids).executeTakeFirst()
      removed += Number(deleted.numDeletedRows)
    }
    return removed
  }

  #live (now: string) {
    return this.db.selectFrom('authorization_artifacts').select('payload')
      .where((where) => where.or([where('expires_at', 'is', null), where('expires_at', '>', now)]))
  }
}
