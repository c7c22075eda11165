import { sql } from 'kysely'
import {
  DOMAIN_CHALLENGE_PREFIX, DOMAIN_CHALLENGE_VALUE_PREFIX, type DomainVerificationMethod, type OrganizationDomain
} from '../../schemas/domains.js'
import type { CollectionRequest } from '../collection/query.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import { holdOrganizationRow } from './organizations.js'
import { type CollectionResult, type PageStore, PageQueries } from './paginate.js'
import { atomically, type Db } from './types.js'

export type { OrganizationDomain }

const COLUMNS = ['id', 'domain', 'verified_at', 'verified_by', 'sso_required', 'txt_record_name', 'txt_record_value', 'created_at'] as const

/** The domain of an address, as a claim stores it (lower case). */
export function emailDomain (email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase()
}

/** Why a domain was not claimed: the organization is gone, or holds `max` claims already. */
export type ClaimRefusal = 'no_organization' | { max: number }

/** The claims with the TXT record each is proved by, as their organization sees them. */
function claims (db: Db) {
  return db.selectFrom(db.selectFrom('organization_domains').select([
    'id', 'organization_id', 'domain', 'verified_at', 'verified_by', 'created_at',
    'sso_required',
    sql<string>`${sql.lit(`${DOMAIN_CHALLENGE_PREFIX}.`)} || domain`.as('txt_record_name'),
    sql<string>`${sql.lit(DOMAIN_CHALLENGE_VALUE_PREFIX)} || verification_token`.as('txt_record_value')
  ]).as('claims'))
}

/** A claim as read (SQLite and PostgreSQL both store the flag as an integer), as the API shows it. */
type StoredClaim = Omit<OrganizationDomain, 'sso_required'> & { sso_required: number }

function claimOf (row: StoredClaim): OrganizationDomain {
  // A page of chosen fields may leave the flag out.
  const claim = row.sso_required === undefined ? row : { ...row, sso_required: Number(row.sso_required) === 1 }
  return claim as OrganizationDomain
}

/** E-mail domains organizations claim and verify (docs/api.md, "Verified domains"). */
export class OrganizationDomainsRepository {
  readonly #pages

  constructor (private readonly db: Db, pages: PageStore) {
    // An organization's claims (organization_domains_organization_id_domain).
    this.#pages = new PageQueries<StoredClaim, { organizationId: string }>(({ organizationId }) =>
      claims(db).where('organization_id', '=', organizationId), COLUMNS, pages)
  }

  /**
   * Records the organization's claim of `domain`, unless it holds `max` claims (its row held,
   * so that claims at once are counted one after another); a domain it claimed already is
   * StoreConflict 'domain_claimed'.
   */
  async claim (
    organizationId: string,
    claim: { domain: string, token: string, now: string, max: number },
    db: Db = this.db
  ): Promise<OrganizationDomain | ClaimRefusal> {
    try {
      return await atomically(db, async (trx) => {
        if (await holdOrganizationRow(trx, organizationId) === undefined) return 'no_organization'
        const held = await trx.selectFrom('organization_domains').select((eb) => eb.fn.countAll<number | string>().as('count'))
          .where('organization_id', '=', organizationId).executeTakeFirst()
        if (Number(held?.count ?? 0) >= claim.max) return { max: claim.max }
        const id = uuidv7()
        await trx.insertInto('organization_domains').values({
          id,
          organization_id: organizationId,
          domain: claim.domain,
          verification_token: claim.token,
          verified_at: null,
          verified_by: null,
          sso_required: 0,
          created_at: claim.now
        }).execute()
        return await this.find(organizationId, id, trx) as OrganizationDomain
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('domain_claimed')
      throw error
    }
  }

  async find (organizationId: string, domainId: string, db: Db = this.db): Promise<OrganizationDomain | undefined> {
    const row = await claims(db).select(COLUMNS).where('organization_id', '=', organizationId).where('id', '=', domainId).executeTakeFirst()
    return row === undefined ? undefined : claimOf(row)
  }

  async list (organizationId: string, request: CollectionRequest): Promise<CollectionResult<OrganizationDomain>> {
    const page = await this.#pages.run(request, { organizationId })
    return { ...page, items: page.items.map(claimOf) }
  }

  /**
   * Marks a pending claim verified; a domain another organization holds verified is
   * StoreConflict 'domain_verified_elsewhere'. Answers the claim as it is then (unchanged when it
   * was verified already), or undefined when it is gone.
   */
  async markVerified (
    organizationId: string,
    domainId: string,
    verification: { method: DomainVerificationMethod, now: string },
    db: Db = this.db
  ): Promise<OrganizationDomain | undefined> {
    try {
      return await atomically(db, async (trx) => {
        await trx.updateTable('organization_domains').set({ verified_at: verification.now, verified_by: verification.method })
          .where('organization_id', '=', organizationId).where('id', '=', domainId).where('verified_at', 'is', null).execute()
        return await this.find(organizationId, domainId, trx)
      })
    } catch (error) {
      if (isUniqueViolation(error)) throw new StoreConflict('domain_verified_elsewhere')
      throw error
    }
  }

  /** Sets whether the claim's addresses sign in through SSO only; the claim as it is then, or undefined. */
  async setSsoRequired (
    organizationId: string, domainId: string, required: boolean, db: Db = this.db
  ): Promise<OrganizationDomain | undefined> {
    return await atomically(db, async (trx) => {
      await trx.updateTable('organization_domains').set({ sso_required: required ? 1 : 0 })
        .where('organization_id', '=', organizationId).where('id', '=', domainId).execute()
      return await this.find(organizationId, domainId, trx)
    })
  }

  /**
   * Whether `domain`'s addresses sign in through SSO only: the organization holding it verified
   * requires it, and has an enabled connection to sign in through (organization_domains_verified_domain,
   * sso_connections_organization_id_created_at).
   */
  async ssoRequiredFor (domain: string): Promise<boolean> {
    const row = await this.db.selectFrom('organization_domains as d').select('d.id')
      .where('d.domain', '=', domain).where('d.verified_at', 'is not', null).where('d.sso_required', '=', 1)
      .where((eb) => eb.exists(eb.selectFrom('sso_connections as c').select('c.id')
        .whereRef('c.organization_id', '=', 'd.organization_id').where('c.enabled', '=', 1)))
      .executeTakeFirst()
    return row !== undefined
  }

  /** The organization holding `domain` verified, if one does (organization_domains_verified_domain). */
  async verifiedHolderOf (domain: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('organization_domains').select('organization_id')
      .where('domain', '=', domain).where('verified_at', 'is not', null).executeTakeFirst()
    return row?.organization_id
  }

  /** Whether the organization holds any domain verified (organization_domains_organization_id_domain). */
  async holdsAnyVerified (organizationId: string): Promise<boolean> {
    const row = await this.db.selectFrom('organization_domains').select('id')
      .where('organization_id', '=', organizationId).where('verified_at', 'is not', null).executeTakeFirst()
    return row !== undefined
  }

  /** Whether the organization holds `domain` verified (organization_domains_organization_id_domain). */
  async isVerifiedFor (organizationId: string, domain: string, db: Db = this.db): Promise<boolean> {
    const row = await db.selectFrom('organization_domains').select('id')
      .where('organization_id', '=', organizationId).where('domain', '=', domain).where('verified_at', 'is not', null).executeTakeFirst()
    return row !== undefined
  }

  /** Removes a claim, verified or not; the domain it named, or undefined when there was none. */
  async remove (organizationId: string, domainId: string, db: Db = this.db): Promise<string | undefined> {
    const row = await db.deleteFrom('organization_domains').where('organization_id', '=', organizationId).where('id', '=', domainId)
      .returning('domain').executeTakeFirst()
    return row?.domain
  }
}
