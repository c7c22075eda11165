import type { OAuthClient, OAuthGrantType } from '../../schemas/oauth-clients.js'
import type { CollectionRequest } from '../collection/query.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import type { Db, OAuthClientsTable } from './types.js'

/** What the API shows of a client: every column but the secret's hash and its creator. */
const CLIENT_COLUMNS = [
  'id', 'name', 'secret_hash', 'redirect_uris', 'post_logout_redirect_uris', 'grant_types', 'scopes', 'id_token_signed_response_alg',
  'disabled_at', 'created_at', 'updated_at'
] as const

type ClientRow = Pick<OAuthClientsTable, typeof CLIENT_COLUMNS[number]>

/** The columns a change may set; `disabled` sets or clears `disabled_at`. */
export type ClientChanges = Partial<Pick<OAuthClientsTable,
'name' | 'redirect_uris' | 'post_logout_redirect_uris' | 'grant_types' | 'scopes' | 'id_token_signed_response_alg'>> & {
  disabled?: boolean
}

/** A client as the API shows it: whether it has a secret, never the secret's hash. */
export function clientOf (row: ClientRow): OAuthClient {
  return {
    id: row.id,
    name: row.name,
    confidential: row.secret_hash !== null,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    post_logout_redirect_uris: JSON.parse(row.post_logout_redirect_uris) as string[],
    grant_types: JSON.parse(row.grant_types) as OAuthGrantType[],
    scopes: JSON.parse(row.scopes) as string[],
    // Clients registered before the choice existed sign with OpenID Connect's default.
    id_token_signed_response_alg: (row.id_token_signed_response_alg ?? 'RS256') as OAuthClient['id_token_signed_response_alg'],
    disabled: row.disabled_at !== null,
    created_at: row.created_at,
    updated_at: row.updated_at
  }
}

/**
 * The applications registered to sign people in with the service (docs/api.md, "OAuth
 * clients"). Disabling or deleting one also removes what the authorization server holds for it
 * (its rows of authorization_artifacts: codes, tokens, consents), on the same transaction.
 */
export class OAuthClientsRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    // The secret's hash is read to tell confidential clients from public ones; clientOf leaves it out.
    this.#pages = new PageQueries<ClientRow, {}>(() => db.selectFrom('oauth_clients'), CLIENT_COLUMNS, pages)
  }

  async create (row: OAuthClientsTable, db: Db = this.db): Promise<OAuthClient> {
    await db.insertInto('oauth_clients').values(row).execute()
    return clientOf(row)
  }

  /**
   * The stored row, its secret's hash included: what the authorization server reads a client
   * by (it takes one with `disabled_at` set as unknown), and what a change starts from.
   */
  async findById (id: string, db: Db = this.db): Promise<OAuthClientsTable | undefined> {
    return await db.selectFrom('oauth_clients').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async find (id: string, db: Db = this.db): Promise<OAuthClient | undefined> {
    const row = await db.selectFrom('oauth_clients').select(CLIENT_COLUMNS).where('id', '=', id).executeTakeFirst()
    return row === undefined ? undefined : clientOf(row)
  }

  async list (request: CollectionRequest): Promise<CollectionResult<OAuthClient>> {
    const page = await this.#pages.run(request, {})
    return { ...page, items: page.items.map(clientOf) }
  }

  /**
   * Changes a client; disabling it removes its artifacts (answered as `removed`). Undefined when
   * there is no such client.
   */
  async update (
    id: string, { disabled, ...changes }: ClientChanges, now: string, db: Db = this.db
  ): Promise<{ client: OAuthClient, removed: number } | undefined> {
    const state = disabled === undefined ? {} : { disabled_at: disabled ? now : null }
    const row = await db.updateTable('oauth_clients').set({ ...changes, ...state, updated_at: now })
      .where('id', '=', id).returning(CLIENT_COLUMNS).executeTakeFirst()
    if (row === undefined) return undefined
    const removed = disabled === true ? await this.#removeArtifacts(id, db) : 0
    return { client: clientOf(row), removed }
  }

  /** Replaces a confidential client's secret hash; undefined when there is no such client, or it is public. */
  async replaceSecretHash (
    id: string, secretHash: string, now: string, db: Db = this.db
  ): Promise<OAuthClient | undefined> {
    const row = await db.updateTable('oauth_clients').set({ secret_hash: secretHash, updated_at: now })
      .where('id', '=', id).where('secret_hash', 'is not', null).returning(CLIENT_COLUMNS).executeTakeFirst()
    return row === undefined ? undefined : clientOf(row)
  }

  /** Deletes a client with its artifacts; undefined when there was none, else how many artifacts went with it. */
  async delete (id: string, db: Db = this.db): Promise<{ removed: number } | undefined> {
    const deleted = await db.deleteFrom('oauth_clients').where('id', '=', id).executeTakeFirst()
    if (Number(deleted.numDeletedRows) === 0) return undefined
    return { removed: await this.#removeArtifacts(id, db) }
  }

  /** Every code, token, consent and device code issued to the client (by authorization_artifacts_client_id). */
  async #removeArtifacts (clientId: string, db: Db): Promise<number> {
    const deleted = await db.deleteFrom('authorization_artifacts').where('client_id', '=', clientId).executeTakeFirst()
    return Number(deleted.numDeletedRows)
  }
}
