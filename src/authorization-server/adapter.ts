import type { Adapter, AdapterPayload } from 'oidc-provider'
import type { AuthorizationArtifactsRepository } from '../store/authorization-artifacts.js'
import { clientOf } from '../store/oauth-clients.js'
import type { RedisShortLivedArtifacts } from '../store/short-lived-artifacts.js'
import type { OAuthClientsTable } from '../store/types.js'

/** What the adapter reads: the artifacts, and the clients an administrator registered. */
export interface AdapterStores {
  artifacts: AuthorizationArtifactsRepository
  /** Where the short-lived models live instead, when Redis is configured. */
  shortLived: RedisShortLivedArtifacts | null
  clients: { findById: (id: string) => Promise<OAuthClientsTable | undefined> }
  /** Whether the service's session an account's session here is bound to is live (a use of it). */
  liveSession: (accountId: string, uid: string) => Promise<boolean>
  now: () => number
}

/**
 * The models a grant's revocation ends (its codes and tokens), found by their grant: as
 * oidc-provider's own adapter has them. An interaction names a grant too, and outlives it.
 */
const GRANTED_MODELS = new Set([
  'AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest', 'PreAuthorizedCode'
])

/**
 * The models that live minutes and hold no account's state: in Redis when there is one. A
 * DevicePoll is the service's own: when a device code was last polled (provider.ts).
 */
const SHORT_LIVED_MODELS = new Set(['Interaction', 'ReplayDetection', 'PushedAuthorizationRequest', 'DevicePoll'])

/** A registered client as oidc-provider's client metadata; its secret is the hash (see compareClientSecret). */
export function clientMetadata (row: OAuthClientsTable): AdapterPayload {
  const client = clientOf(row)
  return {
    client_id: client.id,
    client_name: client.name,
    ...(row.secret_hash !== null && { client_secret: row.secret_hash }),
    token_endpoint_auth_method: client.confidential ? 'client_secret_basic' : 'none',
    redirect_uris: client.redirect_uris,
    post_logout_redirect_uris: client.post_logout_redirect_uris,
    grant_types: client.grant_types,
    response_types: client.grant_types.includes('authorization_code') ? ['code'] : [],
    id_token_signed_response_alg: client.id_token_signed_response_alg,
    scope: client.scopes.join(' ')
  }
}

/**
 * oidc-provider's storage (its adapter interface) over the service's database: one adapter per
 * model. Clients come from `oauth_clients`, a disabled one is not found; everything else is a
 * row of `authorization_artifacts` (src/store/authorization-artifacts.ts), or, with Redis, in
 * Redis for the short-lived models.
 */
export function artifactAdapter (stores: AdapterStores): new (model: string) => Adapter {
  const inDatabase = databaseAdapter(stores)
  return stores.shortLived === null ? inDatabase : shortLivedAdapter(inDatabase, stores.shortLived, stores.now)
}

/** The short-lived models in Redis, the others through `DatabaseAdapter`. */
function shortLivedAdapter (
  DatabaseAdapter: new (model: string) => Adapter,
  shortLived: RedisShortLivedArtifacts,
  now: () => number
): new (model: string) => Adapter {
  return class ShortLivedAdapter implements Adapter {
    readonly #inDatabase: Adapter
    constructor (private readonly model: string) {
      this.#inDatabase = new DatabaseAdapter(model)
    }

    #redis (): RedisShortLivedArtifacts | null {
      return SHORT_LIVED_MODELS.has(this.model) ? shortLived : null
    }

    async upsert (id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const redis = this.#redis()
      if (redis === null) return await this.#inDatabase.upsert(id, payload, expiresIn)
      await redis.upsert(this.model, id, payload as Record<string, unknown>, expiresIn)
    }

    async find (id: string): Promise<AdapterPayload | undefined> {
      const redis = this.#redis()
      if (redis === null) return await this.#inDatabase.find(id) ?? undefined
      return await redis.find(this.model, id) as AdapterPayload | undefined
    }

    async findByUserCode (userCode: string): Promise<AdapterPayload | undefined> {
      return await this.#inDatabase.findByUserCode(userCode) ?? undefined
    }

    async findByUid (uid: string): Promise<AdapterPayload | undefined> {
      const redis = this.#redis()
      if (redis === null) return await this.#inDatabase.findByUid(uid) ?? undefined
      return await redis.findByUid(this.model, uid) as AdapterPayload | undefined
    }

    async consume (id: string): Promise<void> {
      const redis = this.#redis()
      if (redis === null) return await this.#inDatabase.consume(id)
      await redis.consume(this.model, id, Math.floor(now() / 1000))
    }

    async destroy (id: string): Promise<void> {
      const redis = this.#redis()
      if (redis === null) return await this.#inDatabase.destroy(id)
      await redis.destroy(this.model, id)
    }

    async revokeByGrantId (grantId: string): Promise<void> {
      await this.#inDatabase.revokeByGrantId(grantId)
    }
  }
}

/** Every model in the database: clients in `oauth_clients`, the rest in `authorization_artifacts`. */
function databaseAdapter ({ artifacts, clients, liveSession, now }: AdapterStores): new (model: string) => Adapter {
  const iso = (ms: number) => new Date(ms).toISOString()
  const parsed = (payload: string | undefined) =>
    payload === undefined ? undefined : JSON.parse(payload) as AdapterPayload

  return class ArtifactAdapter implements Adapter {
    constructor (private readonly model: string) {}

    async upsert (id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      if (this.model === 'Client') throw new Error('clients are registered through /api/v1/oauth-clients')
      await artifacts.upsert(this.model, id, JSON.stringify(payload), {
        grant_id: GRANTED_MODELS.has(this.model) ? payload.grantId ?? null : null,
        user_code: payload.userCode ?? null,
        uid: payload.uid ?? null,
        account_id: payload.accountId ?? null,
        client_id: payload.clientId ?? null,
        expires_at: expiresIn > 0 ? iso(now() + expiresIn * 1000) : null
      })
    }

    async find (id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') {
        const row = await clients.findById(id)
        return row === undefined || row.disabled_at !== null ? undefined : clientMetadata(row)
      }
      return await this.#live(parsed(await artifacts.find(this.model, id, iso(now()))))
    }

    /**
     * A session here is the service's session (docs/api.md, "Authorization server"): over when
     * that one is, whether found by its cookie (`find`) or by the uid its tokens name (`findByUid`).
     */
    async #live (payload: AdapterPayload | undefined): Promise<AdapterPayload | undefined> {
      if (this.model !== 'Session' || typeof payload?.accountId !== 'string') return payload
      return await liveSession(payload.accountId, String(payload.uid)) ? payload : undefined
    }

    async findByUserCode (userCode: string): Promise<AdapterPayload | undefined> {
      return parsed(await artifacts.findByUserCode(this.model, userCode, iso(now())))
    }

    async findByUid (uid: string): Promise<AdapterPayload | undefined> {
      return await this.#live(parsed(await artifacts.findByUid(this.model, uid, iso(now()))))
    }

    async consume (id: string): Promise<void> {
      await artifacts.consume(this.model, id, Math.floor(now() / 1000))
    }

    async destroy (id: string): Promise<void> {
      await artifacts.destroy(this.model, id)
    }

    async revokeByGrantId (grantId: string): Promise<void> {
      await artifacts.revokeByGrantId(grantId)
    }
  }
}
