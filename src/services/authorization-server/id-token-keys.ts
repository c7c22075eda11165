import type { SecretBox } from '../../security/secret-box.js'
import { generateIdTokenKey, ID_TOKEN_ALGORITHMS, idTokenKey, type IdTokenKey } from '../../security/signing-keys.js'
import type { AuthorizationServerKeyRow, AuthorizationServerKeysRepository } from '../../store/authorization-server-keys.js'

/** The keys the authorization server holds: the signing generation's, and every one it publishes. */
export interface IdTokenKeySet {
  /** One per algorithm of ID_TOKEN_ALGORITHMS: what ID tokens are signed with. */
  signing: IdTokenKey[]
  /** The signing keys, then the staged and retiring generations' (still verifiable). */
  published: IdTokenKey[]
}

/** A key as the rotation commands list it: never its private half. */
export type IdTokenKeyListing = Pick<AuthorizationServerKeyRow, 'kid' | 'algorithm' | 'generation' | 'status' | 'created_at'>

export interface IdTokenKeyServiceDependencies {
  keys: AuthorizationServerKeysRepository
  /** Seals the private keys (purpose `authorization-server-key`). */
  box: SecretBox
  /**
   * false when the sealing key was drawn at start-up (neither SEALING_KEY nor JWT_SECRET set):
   * what it sealed could not be opened after a restart, so the keys live in this process only.
   */
  persistent: boolean
  /** Told when stored keys could not be opened and were replaced. */
  warn: (entry: Record<string, unknown>, message: string) => void
  now?: () => number
}

/**
 * The authorization server's ID-token keys (docs/operations.md, "ID-token keys"): RS256, ES256
 * and EdDSA, generated at the first start and kept in the database, sealed, so that every
 * instance signs with the same ones whatever JWT_ALGORITHM is; rotated in three steps (stage,
 * activate, retire) as the service's own signing key is.
 */
export class IdTokenKeyService {
  readonly #now: () => number
  #inMemory: IdTokenKeySet | undefined

  constructor (private readonly deps: IdTokenKeyServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** The keys to sign and publish with; the first generation is made when there is none. */
  async current (): Promise<IdTokenKeySet> {
    if (!this.deps.persistent) {
      if (this.#inMemory === undefined) {
        const keys = await generation()
        this.#inMemory = { signing: keys, published: keys }
      }
      return this.#inMemory
    }
    let rows = await this.#readable()
    if (!rows.some((row) => row.status === 'signing')) {
      await this.#add(rows, 'signing')
      rows = await this.deps.keys.list()
    }
    const rank = (row: AuthorizationServerKeyRow) => ID_TOKEN_ALGORITHMS.indexOf(row.algorithm as IdTokenKey['privateJwk']['alg'])
    const opened = rows.sort((a, b) => b.generation - a.generation || rank(a) - rank(b))
      .map((row) => ({ row, key: idTokenKey(this.deps.box.open(row.private_key) as string) }))
    const signing = opened.filter(({ row }) => row.status === 'signing')
    return {
      signing: signing.map(({ key }) => key),
      published: [...signing, ...opened.filter(({ row }) => row.status !== 'signing')].map(({ key }) => key)
    }
  }

  /** Step 1: a new generation, published at the next start of each instance but not yet signing. */
  async stage (): Promise<number> {
    const rows = await this.deps.keys.list()
    const staged = rows.find((row) => row.status === 'staged')
    if (staged !== undefined) return staged.generation
    return await this.#add(rows, 'staged')
  }

  /** Step 2: the staged generation signs; the one before retires. Null when none is staged. */
  async activate (): Promise<number | null> {
    const staged = (await this.deps.keys.list()).find((row) => row.status === 'staged')
    if (staged === undefined) return null
    return await this.deps.keys.activate(staged.generation) ? staged.generation : null
  }

  /** Step 3: the retired generations are no longer published; answers how many keys went. */
  async retire (): Promise<number> {
    return await this.deps.keys.removeRetiring()
  }

  async list (): Promise<IdTokenKeyListing[]> {
    return (await this.deps.keys.list()).map(({ kid, algorithm, generation, status, created_at: createdAt }) =>
      ({ kid, algorithm, generation, status, created_at: createdAt }))
  }

  async #add (rows: AuthorizationServerKeyRow[], status: 'staged' | 'signing'): Promise<number> {
    const next = Math.max(0, ...rows.map((row) => row.generation)) + 1
    const createdAt = new Date(this.#now()).toISOString()
    await this.deps.keys.addGeneration((await generation()).map((key) => ({
      kid: key.privateJwk.kid,
      algorithm: key.privateJwk.alg,
      generation: next,
      status,
      private_key: this.deps.box.seal(key.pem),
      created_at: createdAt
    })))
    return next
  }

  /**
   * The stored keys the sealing key ring opens. Keys it cannot open (sealed under a key no longer
   * in the ring) are removed, with a warning: a new generation replaces them. Relying parties
   * check an ID token once, at sign-in, and fetch the keys again for an unknown `kid`.
   */
  async #readable (): Promise<AuthorizationServerKeyRow[]> {
    const rows = await this.deps.keys.list()
    const unreadable = rows.filter((row) => this.deps.box.open(row.private_key) === null)
    if (unreadable.length === 0) return rows
    await this.deps.keys.remove(unreadable.map((row) => row.kid))
    this.deps.warn({ kids: unreadable.map((row) => row.kid) },
      'the authorization server\'s ID-token keys were sealed under a key the sealing key ring no longer holds (SEALING_KEY, ' +
      'SEALING_PREVIOUS_KEYS, JWT_SECRET): they were replaced by new ones')
    return rows.filter((row) => !unreadable.includes(row))
  }
}

/** One key per algorithm, generated side by side. */
async function generation (): Promise<IdTokenKey[]> {
  return await Promise.all(ID_TOKEN_ALGORITHMS.map(async (algorithm) => await generateIdTokenKey(algorithm)))
}
