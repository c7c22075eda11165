import type { Passkey } from '../../schemas/passkeys.js'
import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { type Db, atomically } from './types.js'
import { canSignInWithout, holdUserRow } from './users.js'

/** A passkey as its holder sees it. */
export type { Passkey }

/** What verifying an assertion needs of a stored passkey. */
export interface StoredCredential {
  id: string
  userId: string
  credentialId: string
  publicKey: string
  counter: number
  transports: string[]
}

export interface NewPasskey {
  credentialId: string
  publicKey: string
  counter: number
  transports: string[]
  name: string
}

/** Why a passkey was not removed. */
export type RemovalRefusal = 'not_found' | 'last_sign_in_method'

const COLUMNS = ['id', 'name', 'created_at', 'last_used_at'] as const

/** Users' passkeys: WebAuthn credentials with their public keys and signature counters. */
export class PasskeysRepository {
  readonly #pages

  /** `changed` hears of every user whose passkeys changed (cached principals carry whether there are any). */
  constructor (
    private readonly db: Db,
    pages: PageStore,
    private readonly changed: (userId: string) => void = () => {}
  ) {
    this.#pages = new PageQueries<Passkey, { userId: string }>(({ userId }) =>
      db.selectFrom('passkeys').where('user_id', '=', userId), COLUMNS, pages, { searchIn: ['name'] })
  }

  /** Stores a verified credential; one registered already (to anyone) is StoreConflict 'passkey_registered'. */
  async add (userId: string, passkey: NewPasskey, db: Db = this.db): Promise<Passkey> {
    const row = { id: uuidv7(), name: passkey.name, created_at: new Date().toISOString(), last_used_at: null }
    try {
      await db.insertInto('passkeys').values({
        ...row,
        user_id: userId,
        credential_id: passkey.credentialId,
        public_key: passkey.publicKey,
        counter: passkey.counter,
        transports: passkey.transports.join(',')
      }).execute()
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('passkey_registered')
      throw error
    }
    this.changed(userId)
    return row
  }

  async findByCredentialId (credentialId: string): Promise<StoredCredential | undefined> {
    const row = await this.db.selectFrom('passkeys').select(['id', 'user_id', 'credential_id', 'public_key', 'counter', 'transports'])
      .where('credential_id', '=', credentialId).executeTakeFirst()
    return row === undefined
      ? undefined
      : {
          id: row.id,
          userId: row.user_id,
          credentialId: row.credential_id,
          publicKey: row.public_key,
          counter: Number(row.counter),
          transports: splitTransports(row.transports)
        }
  }

  /** The user's credential ids and transports, for the ceremonies' allow and exclude lists. */
  async credentialsOf (userId: string): Promise<Array<{ id: string, transports: string[] }>> {
    const rows = await this.db.selectFrom('passkeys').select(['credential_id', 'transports'])
      .where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute()
    return rows.map((row) => ({ id: row.credential_id, transports: splitTransports(row.transports) }))
  }

  /**
   * Records a sign-in: the new counter and the time, only if the counter went up (or both are
   * 0: authenticators that keep no counter). False when another sign-in with the same or a
   * later counter got there first, as a cloned authenticator's would.
   */
  async recordUse (id: string, counter: number, now: string): Promise<boolean> {
    const result = await this.db.updateTable('passkeys').set({ counter, last_used_at: now })
      .where('id', '=', id)
      .where((eb) => counter === 0 ? eb('counter', '=', 0) : eb('counter', '<', counter))
      .executeTakeFirst()
    return result.numUpdatedRows > 0n
  }

  /** Renames one of the user's passkeys; undefined when the user has none with this id. */
  async rename (userId: string, id: string, name: string, db: Db = this.db): Promise<Passkey | undefined> {
    return await db.updateTable('passkeys').set({ name })
      .where('id', '=', id).where('user_id', '=', userId)
      .returning(COLUMNS).executeTakeFirst()
  }

  /**
   * Removes one of the user's passkeys unless it is the account's last way to sign in (no
   * password, no linked identity, no other passkey). The user's row is held while counting,
   * so two removals at once cannot both take away the last two.
   */
  async remove (userId: string, id: string, db: Db = this.db): Promise<RemovalRefusal | null> {
    const refusal = await atomically(db, async (trx): Promise<RemovalRefusal | null> => {
      if (!await holdUserRow(trx, userId)) return 'not_found'
      const passkeys = await trx.selectFrom('passkeys').select('id').where('user_id', '=', userId).execute()
      if (!passkeys.some((passkey) => passkey.id === id)) return 'not_found'
      if (passkeys.length === 1 && !await canSignInWithout(trx, userId, 'passkeys')) return 'last_sign_in_method'
      await trx.deleteFrom('passkeys').where('id', '=', id).where('user_id', '=', userId).execute()
      return null
    })
    if (refusal === null) this.changed(userId)
    return refusal
  }

  async list (userId: string, request: CollectionRequest): Promise<CollectionResult<Passkey>> {
    return await this.#pages.run(request, { userId })
  }

  /**
   * Up to `limit` of the user's passkeys, newest first, as the list shows them: never the public
   * key nor the credential id (an account's export, docs/api.md, "Account export").
   */
  async latestOf (userId: string, limit: number): Promise<Passkey[]> {
    return await this.db.selectFrom('passkeys').select(COLUMNS)
      .where('user_id', '=', userId).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
  }
}

function splitTransports (text: string): string[] {
  return text === '' ? [] : text.split(',')
}
