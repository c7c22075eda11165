import { certificateFingerprint, readIdpMetadata, type SamlIdentityProvider, SamlMetadataError } from '../../federation/saml-metadata.js'
import { endpointUrlProblem, type OutboundPolicy } from '../../security/outbound-addresses.js'
import { OutboundHttp, OutboundRequestError, type Resolver } from '../../security/outbound-http.js'
import type { IdpMetadataSchedule, SsoConnectionsRepository, StoredSamlConnection } from '../../store/sso-connections.js'
import type { AuditTrail } from '../audit/index.js'

const HOUR = 60 * 60 * 1000
/** A connection's metadata is read again this long after a good read: IdPs publish a new certificate weeks ahead. */
const IDP_METADATA_REFRESH_MS = 24 * HOUR
/** After a failed read: an hour, then twice as long after each failure that follows, up to a day. */
const IDP_METADATA_RETRY_MS = HOUR
/** How long an instance holds a read it took, before another may take it (longer than any read lasts). */
const READ_HOLD_MS = 10 * 60 * 1000
/** Connections taken at a time, and read at once. */
const REFRESH_BATCH = 20
const REFRESH_CONCURRENCY = 4
/** A run of the job takes batches until none is due or this long has passed (the job runs every 10 minutes). */
const REFRESH_BUDGET_MS = 2 * 60 * 1000
/** The most of an answer read: as much as pasted metadata may hold (schemas/sso.ts). */
const IDP_METADATA_MAX_BYTES = 500_000
/** The whole of one read: resolving, connecting, reading. */
const IDP_METADATA_TIMEOUT_MS = 10_000

/**
 * An IdP's metadata read from its URL (docs/api.md, "Enterprise sign-in"): the URL is one the
 * service may fetch (https, no credentials, its addresses allowed by the outbound rule, as a
 * webhook endpoint's), the answer a 200 of at most IDP_METADATA_MAX_BYTES, redirects not
 * followed, and the document what a pasted one must be.
 */
export class IdpMetadataSource {
  readonly #http: OutboundHttp

  constructor (private readonly deps: { policy: OutboundPolicy, loopbackHttp: boolean, resolve?: Resolver }) {
    this.#http = new OutboundHttp({
      policy: deps.policy,
      timeoutMs: IDP_METADATA_TIMEOUT_MS,
      maxResponseBytes: IDP_METADATA_MAX_BYTES,
      userAgent: 'users-api-sso/1',
      ...(deps.resolve !== undefined && { resolve: deps.resolve })
    })
  }

  /** The IdP the metadata at `url` describes; a SamlMetadataError says why there is none. */
  async read (url: string): Promise<SamlIdentityProvider> {
    const problem = endpointUrlProblem(url, this.deps.policy)
    if (problem !== null) throw new SamlMetadataError(`the metadata URL ${problem}`)
    let answer
    try {
      answer = await this.#http.request({
        method: 'GET', url, headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' }
      })
    } catch (error) {
      if (!(error instanceof OutboundRequestError)) throw error
      throw new SamlMetadataError(`the metadata could not be read: ${error.message}`)
    }
    if (answer.status !== 200) {
      throw new SamlMetadataError(`the metadata could not be read: answered ${answer.status}${answer.status >= 300 && answer.status < 400 ? ' (redirects are not followed)' : ''}`)
    }
    if (!answer.complete) throw new SamlMetadataError(`the metadata is larger than ${IDP_METADATA_MAX_BYTES} bytes`)
    return readIdpMetadata(answer.body.toString('utf8'), this.deps.loopbackHttp)
  }

  /** The schedule of a connection whose metadata was just read from `url`. */
  static readNow (url: string, now: number): IdpMetadataSchedule {
    const dueAt = new Date(now + IDP_METADATA_REFRESH_MS).toISOString()
    return { url, readAt: new Date(now).toISOString(), dueAt, failures: 0 }
  }
}

/** Whether two descriptions of an IdP differ in anything a sign-in uses. */
function differs (before: SamlIdentityProvider, after: SamlIdentityProvider): boolean {
  return before.entityId !== after.entityId || before.ssoUrl !== after.ssoUrl ||
    before.certificates.join() !== after.certificates.join()
}

/** When a read that is the `failures`-th failure in a row is tried again. */
function retryDelayMs (failures: number): number {
  return Math.min(IDP_METADATA_REFRESH_MS, IDP_METADATA_RETRY_MS * 2 ** Math.max(0, failures - 1))
}

export interface IdpMetadataRefreshDependencies {
  ssoConnections: SsoConnectionsRepository
  source: IdpMetadataSource
  audit: AuditTrail
  now: () => number
}

/**
 * Reads again the metadata of the connections configured by URL once it is due (the background
 * job `sso-metadata-refresh`): a changed IdP (a new certificate, usually) is taken up and audited
 * as `sso_connection.updated`; a failed read keeps what was read before and is tried again after
 * an hour, then after twice as long each time up to a day; the first failure of a run of them is
 * audited as `sso_connection.metadata_unreadable`.
 */
export class IdpMetadataRefresh {
  constructor (private readonly deps: IdpMetadataRefreshDependencies) {}

  /** Reads what is due, a batch at a time, until none is or the budget is spent: how many read, how many failed. */
  async refreshDue (): Promise<{ read: number, failed: number }> {
    const { ssoConnections, now } = this.deps
    const ends = now() + REFRESH_BUDGET_MS
    const tally = { read: 0, failed: 0 }
    while (now() < ends) {
      const due = await ssoConnections.metadataDue(new Date(now()).toISOString(), REFRESH_BATCH)
      for (let start = 0; start < due.length; start += REFRESH_CONCURRENCY) {
        const batch = due.slice(start, start + REFRESH_CONCURRENCY)
        const outcomes = await Promise.all(batch.map(async (connection) => await this.#refresh(connection)))
        for (const outcome of outcomes) if (outcome !== 'taken') tally[outcome]++
      }
      if (due.length < REFRESH_BATCH) break
    }
    return tally
  }

  async #refresh (connection: StoredSamlConnection): Promise<'read' | 'failed' | 'taken'> {
    const { ssoConnections, source, audit, now } = this.deps
    const schedule = connection.idpMetadata
    if (schedule === null) return 'taken'
    const claim = { url: schedule.url, heldUntil: new Date(now() + READ_HOLD_MS).toISOString() }
    if (!await ssoConnections.claimMetadataRead(connection.id, schedule.dueAt, claim.heldUntil)) return 'taken'
    const details = { organization_id: connection.organizationId, connection_id: connection.id }
    let idp: SamlIdentityProvider
    try {
      idp = await source.read(schedule.url)
    } catch (error) {
      if (!(error instanceof SamlMetadataError)) throw error
      const at = now()
      const failures = schedule.failures + 1
      await audit.recordServiceChange(
        async (trx) => await ssoConnections.metadataRead(connection.id, claim, {
          at: new Date(at).toISOString(), dueAt: new Date(at + retryDelayMs(failures)).toISOString(), failures
        }, trx),
        (updated) => updated === undefined || failures > 1
          ? []
          : [{ event: 'sso_connection.metadata_unreadable', outcome: 'failure', details: { ...details, reason: error.message } }])
      return 'failed'
    }
    const changed = differs(connection.idp, idp)
    const { readAt, dueAt } = IdpMetadataSource.readNow(schedule.url, now())
    await audit.recordServiceChange(
      async (trx) =>
        await ssoConnections.metadataRead(connection.id, claim, { idp, at: readAt, dueAt, failures: 0 }, trx),
      (updated) => updated === undefined || !changed
        ? []
        : [{
            event: 'sso_connection.updated',
            outcome: 'success',
            details: { ...details, fields: ['idp_metadata_url'], idp_certificate_fingerprints: idp.certificates.map(certificateFingerprint) }
          }])
    return 'read'
  }
}
