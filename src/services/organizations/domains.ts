import { randomBytes } from 'node:crypto'
import {
  DOMAIN_FIELDS, type DomainClaim, type DomainUpdate, type DomainVerificationMethod
} from '../../../schemas/domains.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, rethrowServiceError } from '../../errors.js'
import { hasPermission } from '../../security/permissions.js'
import type { OrganizationDomain, OrganizationDomainsRepository } from '../../store/organization-domains.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'
import { isNoRecord, type TxtResolver } from './txt-records.js'

/** Claims one organization may hold, verified or not: enough for its brands, too few to hoard. */
export const DOMAINS_PER_ORGANIZATION = 20

export interface DomainServiceDependencies {
  organizationDomains: OrganizationDomainsRepository
  audit: AuditTrail
  cursors: CursorCodec
  resolveTxt: TxtResolver
  now?: () => number
}

/**
 * The e-mail domains of organizations (docs/api.md, "Verified domains"). Any number of
 * organizations may claim a domain; one only holds it verified, by the TXT record its claim
 * names or by an operator's word. Only a verified domain routes sign-in to an organization.
 */
export class DomainService {
  readonly #now: () => number

  constructor (private readonly deps: DomainServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** Claims a domain for the organization: the answer names the TXT record that proves it. */
  async claim (context: RequestContext, organizationId: string, { domain }: DomainClaim): Promise<OrganizationDomain> {
    callerOf(context)
    const name = domain.toLowerCase()
    const claim = { domain: name, token: randomBytes(24).toString('base64url'), now: new Date(this.#now()).toISOString(), max: DOMAINS_PER_ORGANIZATION }
    const claimed = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizationDomains.claim(organizationId, claim, trx).catch(rethrowServiceError),
      (result) => typeof result === 'object' && 'id' in result
        ? [{ event: 'domain.claimed', outcome: 'success', details: { organization_id: organizationId, domain_id: result.id, domain: name } }]
        : [])
    if (claimed === 'no_organization') throw new Errors.NOT_FOUND('Organization')
    if ('max' in claimed) throw new Errors.CONFLICT(`An organization claims at most ${claimed.max} domains`)
    return claimed
  }

  async list (context: RequestContext, organizationId: string, query: CollectionQueryInput) {
    callerOf(context)
    return await collectionPage(query, {
      ...DOMAIN_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: `organization-domains:${organizationId}`
    }, this.deps.cursors, async (request) => await this.deps.organizationDomains.list(organizationId, request))
  }

  async get (context: RequestContext, organizationId: string, domainId: string): Promise<OrganizationDomain> {
    callerOf(context)
    return await this.#find(organizationId, domainId)
  }

  /**
   * Verifies a claim: by looking up its TXT record now, or, for a super_admin, by their word
   * (an operator who checked the domain's ownership otherwise). A verified claim answers as it is.
   */
  async verify (
    context: RequestContext,
    organizationId: string,
    domainId: string,
    method: DomainVerificationMethod
  ): Promise<OrganizationDomain> {
    const caller = holderOf(context, 'changing how the organization signs in')
    if (method === 'operator' && !hasPermission(caller, 'admin')) throw new Errors.FORBIDDEN('super_admin')
    const claim = await this.#find(organizationId, domainId)
    if (claim.verified_at !== null) return claim
    if (method === 'dns') await this.#assertPublished(claim)
    const verification = { method, now: new Date(this.#now()).toISOString() }
    const verified = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizationDomains.markVerified(organizationId, domainId, verification, trx)
        .catch(rethrowServiceError),
      (result) => result === undefined
        ? []
        : [{ event: 'domain.verified', outcome: 'success', details: { organization_id: organizationId, domain_id: domainId, domain: claim.domain, method } }])
    if (verified === undefined) throw new Errors.NOT_FOUND('Domain')
    return verified
  }

  /**
   * Requires, or no longer requires, SSO of the domain's addresses: while the claim is verified
   * and the organization has an enabled connection, they never sign in with a password.
   */
  async update (
    context: RequestContext, organizationId: string, domainId: string, { sso_required: required }: DomainUpdate
  ): Promise<OrganizationDomain> {
    holderOf(context, 'changing how the organization signs in')
    const updated = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizationDomains.setSsoRequired(organizationId, domainId, required, trx),
      (claim) => claim === undefined
        ? []
        : [{ event: 'domain.updated', outcome: 'success', details: { organization_id: organizationId, domain_id: domainId, domain: claim.domain, sso_required: required } }])
    if (updated === undefined) throw new Errors.NOT_FOUND('Domain')
    return updated
  }

  /** Withdraws a claim, verified or not: sign-in with an address of the domain no longer routes to the organization. */
  async remove (context: RequestContext, organizationId: string, domainId: string): Promise<void> {
    holderOf(context, 'changing how the organization signs in')
    const removed = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.organizationDomains.remove(organizationId, domainId, trx),
      (domain) => domain === undefined
        ? []
        : [{ event: 'domain.removed', outcome: 'success', details: { organization_id: organizationId, domain_id: domainId, domain } }])
    if (removed === undefined) throw new Errors.NOT_FOUND('Domain')
  }

  async #find (organizationId: string, domainId: string): Promise<OrganizationDomain> {
    const claim = await this.deps.organizationDomains.find(organizationId, domainId)
    if (claim === undefined) throw new Errors.NOT_FOUND('Domain')
    return claim
  }

  /** Refuses unless a TXT record at the claim's name holds its value (its strings joined, as RFC 7208 reads them). */
  async #assertPublished (claim: OrganizationDomain): Promise<void> {
    let records: string[][]
    try {
      records = await this.deps.resolveTxt(claim.txt_record_name)
    } catch (error) {
      if (!isNoRecord(error)) throw new Errors.SERVICE_UNAVAILABLE(`the DNS lookup of ${claim.txt_record_name} failed; try again`)
      records = []
    }
    if (!records.some((strings) => strings.join('') === claim.txt_record_value)) {
      throw new Errors.CONFLICT(`No TXT record ${claim.txt_record_name} holds this claim's value (txt_record_value) yet`)
    }
  }
}
