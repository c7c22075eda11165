import { certificateFingerprint, readIdpMetadata, type SamlIdentityProvider, SamlMetadataError } from '../../federation/saml-metadata.js'
import { endpointUrlProblem, type OutboundPolicy } from '../../security/outbound-addresses.js'
import { type OutboundHttp, OutboundRequestError } from '../../security/outbound-http.js'
import type { IdpMetadataSchedule, SsoConnectionsRepository, StoredSsoConnection } from '../../store/sso-connections.js'
import type { AuditTrail } from '../audit/index.js'

const HOUR = 60 * 60 * 1000
/** A connection's metadata is read again this long after a good read: IdPs publish a new certificate weeks ahead. */
export const IDP_METADATA_REFRESH_MS = 24 * HOUR
/** And this long after a failed one. */
export const IDP_METADATA_RETRY_MS = HOUR
/** How long an instance holds a read it took, before another may take it (longer than any read lasts). */
const READ_HOLD_MS = 10 * 60 * 1000
/** Connections read per run of the job; the rest wait for the next run. */
const REFRESH_BATCH = 20
/** The most of an answer read: the largest metadata a connection accepts pasted is 500,000 characters. */
export const IDP_METADATA_MAX_BYTES = 1024 * 1024
/** The whole of one read: resolving, connecting, reading. */
export const IDP_METADATA_TIMEOUT_MS = 10_000

/**
 * An IdP's metadata read from its URL (docs/api.md, "Enterprise sign-in"): the URL is one the
 * service may fetch (https, no credentials, its addresses allowed by the outbound rule, as a
 * webhook endpoint's), the answer a 200 of at most IDP_METADATA_MAX_BYTES, redirects not
 * followed, and the document what a pasted one must be.
 */
export class IdpMetadataSource {
  constructor (private readonly deps: { http: OutboundHttp, policy: OutboundPolicy, loopbackHttp: boolean }) {}

  /** Why `url` may not be read, for a 400; null when it may. */
  urlProblem (url: string): string | null {
    return endpointUrlProblem(url, this.deps.policy)
  }

  /** The IdP the metadata at `url` describes; a SamlMetadataError says why there is none. */
  async read (url: string): Promise<SamlIdentityProvider> {
    const problem = this.urlProblem(url)
    if (problem !== null) throw new SamlMetadataError(`the metadata URL ${problem}`)
    let answer
    try {
      answer = await this.deps.http.request({
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
    return { url, readAt: new Date(now).toISOString(), dueAt: new Date(now + IDP_METADATA_REFRESH_MS).toISOString() }
  }
}

/** Whether two descriptions of an IdP differ in anything a sign-in uses. */
function differs (before: SamlIdentityProvider, after: SamlIdentityProvider): boolean {
  return before.entityId !== after.entityId || before.ssoUrl !== after.ssoUrl ||
    before.certificates.join() !== after.certificates.join()
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
 * as `sso_connection.updated`; a failed read keeps what was read before, is audited as
 * `sso_connection.metadata_unreadable`, and is tried again within the hour.
 */
export class IdpMetadataRefresh {
  constructor (private readonly deps: IdpMetadataRefreshDependencies) {}

  /** Reads what is due now: how many were read and how many failed. */
  async refreshDue (): Promise<{ read: number, failed: number }> {
    const { ssoConnections, now } = this.deps
    const due = await ssoConnections.metadataDue(new Date(now()).toISOString(), REFRESH_BATCH)
    let read = 0
    let failed = 0
    for (const connection of due) {
      const outcome = await this.#refresh(connection)
      if (outcome === 'read') read++
      if (outcome === 'failed') failed++
    }
    return { read, failed }
  }

  async #refresh (connection: StoredSsoConnection): Promise<'read' | 'failed' | 'taken'> {
    const { ssoConnections, source, audit, now } = this.deps
    const schedule = connection.idpMetadata
    if (schedule === null) return 'taken'
    const holdUntil = new Date(now() + READ_HOLD_MS).toISOString()
    const claimed = await ssoConnections.claimMetadataRead(connection.id, schedule.dueAt, holdUntil)
    if (!claimed) return 'taken'
    const details = { organization_id: connection.organizationId, connection_id: connection.id }
    let idp: SamlIdentityProvider
    try {
      idp = await source.read(schedule.url)
    } catch (error) {
      if (!(error instanceof SamlMetadataError)) throw error
      const at = now()
      await audit.recordServiceChange(
        async (trx) => await ssoConnections.metadataRead(connection.id, schedule.url, {
          at: new Date(at).toISOString(), dueAt: new Date(at + IDP_METADATA_RETRY_MS).toISOString()
        }, trx),
        (updated) => updated === undefined
          ? []
          : [{ event: 'sso_connection.metadata_unreadable', outcome: 'failure', details: { ...details, reason: error.message } }])
      return 'failed'
    }
    const changed = differs(connection.idp, idp)
    const { readAt, dueAt } = IdpMetadataSource.readNow(schedule.url, now())
    await audit.recordServiceChange(
      async (trx) => await ssoConnections.metadataRead(connection.id, schedule.url, { idp, at: readAt, dueAt }, trx),
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
