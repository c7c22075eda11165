import type { SsoConnection, SsoConnectionCreate, SsoConnectionUpdate } from '../../../schemas/sso.js'
import { Errors, validationFailed } from '../../errors.js'
import type { SamlServiceProvider } from '../../federation/saml.js'
import { serviceProviderMetadata } from '../../federation/saml.js'
import {
  certificateBody, certificateFingerprint, isLoopbackUrl, readIdpMetadata, type SamlIdentityProvider, SamlMetadataError,
  ssoUrlProblem
} from '../../federation/saml-metadata.js'
import type { SecretBox } from '../../security/secret-box.js'
import type {
  IdpMetadataSchedule, OidcClientSettings, SsoConnectionChanges, SsoConnectionSettings, SsoConnectionsRepository,
  StoredSsoConnection
} from '../../store/sso-connections.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'
import type { FederatedSignInService } from '../sign-in/index.js'
import { IdpMetadataSource } from './idp-metadata.js'
import type { OrganizationIssuers } from './oidc-issuers.js'

/** Connections one organization may hold: one per identity provider, and a few to move between them. */
export const SSO_CONNECTIONS_PER_ORGANIZATION = 10

const tooManyConnections = () => new Errors.CONFLICT(`An organization holds at most ${SSO_CONNECTIONS_PER_ORGANIZATION} SSO connections`)

export interface SsoConnectionServiceDependencies {
  ssoConnections: SsoConnectionsRepository
  audit: AuditTrail
  /** Which URLs a browser may be sent to (an IdP-initiated sign-in's login URL). */
  federation: Pick<FederatedSignInService, 'admittedReturn'>
  /** Reads an IdP's metadata from the URL an owner gives. */
  metadataSource: IdpMetadataSource
  /** Reads an OpenID provider's discovery document from the issuer an owner gives. */
  issuers: OrganizationIssuers
  /** Seals OpenID clients' secrets. */
  clientSecrets: SecretBox
  /** The service's own address (PUBLIC_URL): the connection's SP URLs are made from it. */
  publicUrl: string
  now?: () => number
}

/** The service as the SAML service provider of a connection: its entity ID (its metadata's URL) and ACS. */
export function serviceProviderOf (publicUrl: string, connectionId: string): SamlServiceProvider & { base: string } {
  const base = `${publicUrl}/api/v1/sso/saml/${connectionId}`
  return { base, entityId: `${base}/metadata`, acsUrl: `${base}/acs` }
}

/**
 * The service as the OpenID client of a connection: where its sign-in starts, and the redirect
 * URI to register, one for every connection (the flow's state says which connection it is of).
 */
export function openIdClientOf (publicUrl: string, connectionId: string): { signInUrl: string, redirectUri: string } {
  return { signInUrl: `${publicUrl}/api/v1/sso/oidc/${connectionId}/sign-in`, redirectUri: `${publicUrl}/api/v1/sso/oidc/callback` }
}

/** What an OpenID connection asks for unless its owner says otherwise. */
const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile']

const SAML_FIELDS = ['idp_metadata_xml', 'idp_metadata_url', 'idp_entity_id', 'idp_sso_url', 'idp_certificates'] as const
const OIDC_FIELDS = ['oidc_issuer', 'oidc_client_id', 'oidc_client_secret', 'oidc_token_endpoint_auth_method', 'oidc_scopes'] as const

/** The fields of `names` the input gives. */
function givenOf (input: SsoConnectionCreate | SsoConnectionUpdate, names: readonly string[]): string[] {
  return names.filter((name) => (input as Record<string, unknown>)[name] !== undefined)
}

/** The identity provider a create or update describes, and where its metadata is read again (null: nowhere). */
interface DescribedIdp { idp: SamlIdentityProvider, metadata: IdpMetadataSchedule | null }

/**
 * The identity provider a create or update describes: by its metadata, its metadata's URL (read
 * now), or its three fields (all of them); undefined when it describes none (an update of other fields).
 */
async function identityProviderOf (
  input: SsoConnectionCreate | SsoConnectionUpdate, loopbackHttp: boolean, source: IdpMetadataSource, now: number
): Promise<DescribedIdp | undefined> {
  const { idp_metadata_xml: xml, idp_metadata_url: url } = input
  const { idp_entity_id: entityId, idp_sso_url: ssoUrl, idp_certificates: certificates } = input
  const fields = [entityId, ssoUrl, certificates].filter((field) => field !== undefined).length
  const ways = [xml, url].filter((way) => way !== undefined).length + (fields > 0 ? 1 : 0)
  if (ways > 1) {
    throw validationFailed([{ path: '/idp_metadata_xml', message: 'give the metadata, its URL or the three idp_ fields: one of them' }])
  }
  const path = xml !== undefined ? '/idp_metadata_xml' : url !== undefined ? '/idp_metadata_url' : '/idp_certificates'
  try {
    if (xml !== undefined) return { idp: readIdpMetadata(xml, loopbackHttp), metadata: null }
    if (url !== undefined) return { idp: await source.read(url), metadata: IdpMetadataSource.readNow(url, now) }
    if (fields === 0) return undefined
    if (entityId === undefined || ssoUrl === undefined || certificates === undefined) {
      throw validationFailed([{ path: '/idp_entity_id', message: 'idp_entity_id, idp_sso_url and idp_certificates go together' }])
    }
    const problem = ssoUrlProblem(ssoUrl, loopbackHttp)
    if (problem !== null) throw validationFailed([{ path: '/idp_sso_url', message: problem }])
    return { idp: { entityId, ssoUrl, certificates: [...new Set(certificates.map(certificateBody))] }, metadata: null }
  } catch (error) {
    if (!(error instanceof SamlMetadataError)) throw error
    throw validationFailed([{ path, message: error.message }])
  }
}

/**
 * An organization's connections to its own identity providers (docs/api.md, "Enterprise
 * sign-in"), managed by its owners (`sso:manage`); a connection names its IdP by metadata or
 * by entity ID, SSO URL and certificates, and how its assertions map to a member.
 */
export class SsoConnectionService {
  readonly #now: () => number

  constructor (private readonly deps: SsoConnectionServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** A connection as its organization's owners see it, with the URLs to give the IdP. */
  view (connection: StoredSsoConnection): SsoConnection {
    const common = {
      id: connection.id,
      organization_id: connection.organizationId,
      name: connection.name,
      kind: connection.kind,
      enabled: connection.enabled,
      attribute_mapping: connection.attributeMapping,
      role_mapping: connection.roleMapping,
      default_role: connection.defaultRole,
      idp_initiated_login_url: connection.idpInitiatedLoginUrl,
      created_at: connection.createdAt,
      updated_at: connection.updatedAt
    }
    if (connection.kind === 'oidc') {
      const client = openIdClientOf(this.deps.publicUrl, connection.id)
      return {
        ...common,
        idp_entity_id: null,
        idp_sso_url: null,
        idp_certificate_fingerprints: [],
        idp_metadata_url: null,
        idp_metadata_read_at: null,
        sp_entity_id: null,
        acs_url: null,
        sp_metadata_url: null,
        oidc_issuer: connection.oidc.issuer,
        oidc_client_id: connection.oidc.clientId,
        oidc_token_endpoint_auth_method: connection.oidc.tokenEndpointAuthMethod,
        oidc_scopes: connection.oidc.scopes,
        oidc_redirect_uri: client.redirectUri,
        sign_in_url: client.signInUrl
      }
    }
    const sp = serviceProviderOf(this.deps.publicUrl, connection.id)
    return {
      ...common,
      idp_entity_id: connection.idp.entityId,
      idp_sso_url: connection.idp.ssoUrl,
      idp_certificate_fingerprints: connection.idp.certificates.map(certificateFingerprint),
      idp_metadata_url: connection.idpMetadata?.url ?? null,
      idp_metadata_read_at: connection.idpMetadata?.readAt ?? null,
      sp_entity_id: sp.entityId,
      acs_url: sp.acsUrl,
      sp_metadata_url: sp.entityId,
      oidc_issuer: null,
      oidc_client_id: null,
      oidc_token_endpoint_auth_method: null,
      oidc_scopes: null,
      oidc_redirect_uri: null,
      sign_in_url: `${sp.base}/sign-in`
    }
  }

  async create (context: RequestContext, organizationId: string, input: SsoConnectionCreate): Promise<SsoConnection> {
    holderOf(context, 'changing how the organization signs in')
    // A metadata URL or an issuer is read only for a connection that may be made (the count is
    // checked again as it is stored).
    if ((input.idp_metadata_url !== undefined || input.oidc_issuer !== undefined) &&
      (await this.deps.ssoConnections.listOf(organizationId)).length >= SSO_CONNECTIONS_PER_ORGANIZATION) {
      throw tooManyConnections()
    }
    const openId = givenOf(input, OIDC_FIELDS).length > 0
    if (openId && givenOf(input, SAML_FIELDS).length > 0) {
      throw validationFailed([{ path: '/oidc_issuer', message: 'a connection is to a SAML IdP (the idp_ fields) or to an OpenID provider (the oidc_ fields), not both' }])
    }
    const protocol = openId ? { oidc: await this.#openIdClient(input, null) } : await this.#samlIdp(input)
    const settings: SsoConnectionSettings = {
      name: input.name,
      enabled: input.enabled ?? true,
      ...protocol,
      attributeMapping: input.attribute_mapping ?? {},
      roleMapping: input.role_mapping ?? {},
      defaultRole: input.default_role ?? 'member',
      idpInitiatedLoginUrl: this.#loginUrl(input.idp_initiated_login_url, openId)
    }
    const described = 'oidc' in protocol ? { oidc_issuer: protocol.oidc.issuer } : { idp_entity_id: protocol.idp.entityId }
    const now = new Date(this.#now()).toISOString()
    const created = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.ssoConnections.create(
        organizationId, settings, now, SSO_CONNECTIONS_PER_ORGANIZATION, trx
      ),
      (result) => typeof result === 'object' && 'id' in result
        ? [{ event: 'sso_connection.created', outcome: 'success', details: { organization_id: organizationId, connection_id: result.id, ...described } }]
        : [])
    if (created === 'no_organization') throw new Errors.NOT_FOUND('Organization')
    if ('max' in created) throw tooManyConnections()
    return this.view(created)
  }

  /** A new SAML connection's IdP, which it must describe. */
  async #samlIdp (
    input: SsoConnectionCreate
  ): Promise<{ idp: SamlIdentityProvider, idpMetadata: IdpMetadataSchedule | null }> {
    const described = await this.#described(input)
    if (described === undefined) {
      throw validationFailed([{ path: '/idp_metadata_xml', message: 'give the IdP\'s metadata, its URL, or idp_entity_id, idp_sso_url and idp_certificates (or, for an OpenID provider, the oidc_ fields)' }])
    }
    return { idp: described.idp, idpMetadata: described.metadata }
  }

  /**
   * The OpenID client a create describes, or an update makes of `current`: issuer, client ID and
   * secret together (the secret sealed); a new issuer's discovery document read now, and refused
   * (400) unless it is usable.
   */
  async #openIdClient (
    input: SsoConnectionCreate | SsoConnectionUpdate, current: OidcClientSettings | null
  ): Promise<OidcClientSettings> {
    // The secret goes to the issuer's token endpoint: a new issuer gets it only given anew, never the stored one.
    const newIssuer = current !== null && input.oidc_issuer !== undefined && input.oidc_issuer !== current.issuer
    if (newIssuer && input.oidc_client_secret === undefined) {
      throw validationFailed([{ path: '/oidc_client_secret', message: 'is required with a new oidc_issuer: the stored secret is not sent to another issuer' }])
    }
    const issuer = input.oidc_issuer ?? current?.issuer
    const clientId = input.oidc_client_id ?? current?.clientId
    const sealedClientSecret = input.oidc_client_secret !== undefined
      ? this.deps.clientSecrets.seal(input.oidc_client_secret)
      : current?.sealedClientSecret
    if (issuer === undefined || clientId === undefined || sealedClientSecret === undefined) {
      throw validationFailed([{ path: '/oidc_issuer', message: 'oidc_issuer, oidc_client_id and oidc_client_secret go together' }])
    }
    const scopes = input.oidc_scopes ?? current?.scopes ?? DEFAULT_OIDC_SCOPES
    if (!scopes.includes('openid')) throw validationFailed([{ path: '/oidc_scopes', message: 'must include openid' }])
    if (input.oidc_issuer !== undefined) {
      const problem = this.deps.issuers.issuerProblem(issuer)
      if (problem !== null) throw validationFailed([{ path: '/oidc_issuer', message: problem }])
      try {
        await this.deps.issuers.of(issuer).discover()
      } catch (error) {
        if (!(error instanceof Errors.OAUTH_PROVIDER_ERROR)) throw error
        throw validationFailed([{ path: '/oidc_issuer', message: `the provider's discovery document is not usable: ${error.message}` }])
      }
    }
    return {
      issuer,
      clientId,
      sealedClientSecret,
      tokenEndpointAuthMethod: input.oidc_token_endpoint_auth_method ?? current?.tokenEndpointAuthMethod ?? 'client_secret_basic',
      scopes
    }
  }

  async #described (input: SsoConnectionCreate | SsoConnectionUpdate): Promise<DescribedIdp | undefined> {
    return await identityProviderOf(input, isLoopbackUrl(this.deps.publicUrl), this.deps.metadataSource, this.#now())
  }

  /**
   * An IdP-initiated sign-in's login URL, as the browser will be sent to it: one of the allowed
   * redirect URLs (OAUTH_REDIRECT_URLS) or a path below one, as for any browser application.
   */
  #loginUrl (url: string | null | undefined, openId: boolean): string | null {
    if (url === undefined || url === null) return null
    if (openId) throw validationFailed([{ path: '/idp_initiated_login_url', message: 'is for SAML connections only' }])
    const admitted = this.deps.federation.admittedReturn(url)
    if (admitted === null) {
      throw validationFailed([{ path: '/idp_initiated_login_url', message: 'must be one of the allowed redirect URLs (OAUTH_REDIRECT_URLS) or a path below one' }])
    }
    return admitted
  }

  async list (context: RequestContext, organizationId: string): Promise<SsoConnection[]> {
    callerOf(context)
    return (await this.deps.ssoConnections.listOf(organizationId)).map((connection) => this.view(connection))
  }

  async get (context: RequestContext, organizationId: string, connectionId: string): Promise<SsoConnection> {
    callerOf(context)
    const connection = await this.deps.ssoConnections.find(connectionId)
    if (connection?.organizationId !== organizationId) throw new Errors.NOT_FOUND('SSO connection')
    return this.view(connection)
  }

  async update (
    context: RequestContext, organizationId: string, connectionId: string, input: SsoConnectionUpdate
  ): Promise<SsoConnection> {
    holderOf(context, 'changing how the organization signs in')
    const saml = givenOf(input, SAML_FIELDS).length > 0
    const openId = givenOf(input, OIDC_FIELDS).length > 0
    // A metadata URL or an issuer is read only for a connection that exists; the protocol fields must be its kind's.
    const needsCurrent = saml || openId || input.idp_initiated_login_url !== undefined
    const current = needsCurrent ? await this.deps.ssoConnections.find(connectionId) : undefined
    if (needsCurrent && current?.organizationId !== organizationId) throw new Errors.NOT_FOUND('SSO connection')
    if (current?.kind === 'oidc' && saml) {
      throw validationFailed([{ path: '/idp_metadata_xml', message: 'this connection is to an OpenID provider: it takes the oidc_ fields' }])
    }
    if (current?.kind === 'saml' && openId) {
      throw validationFailed([{ path: '/oidc_issuer', message: 'this connection is to a SAML IdP: it takes the idp_ fields' }])
    }
    const described = saml ? await this.#described(input) : undefined
    const oidc = current?.kind === 'oidc' && openId ? await this.#openIdClient(input, current.oidc) : undefined
    const changes: SsoConnectionChanges = {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.enabled !== undefined && { enabled: input.enabled }),
      ...(described !== undefined && { idp: described.idp, idpMetadata: described.metadata }),
      ...(oidc !== undefined && { oidc }),
      ...(input.attribute_mapping !== undefined && { attributeMapping: input.attribute_mapping }),
      ...(input.role_mapping !== undefined && { roleMapping: input.role_mapping }),
      ...(input.default_role !== undefined && { defaultRole: input.default_role }),
      ...(input.idp_initiated_login_url !== undefined && {
        idpInitiatedLoginUrl: this.#loginUrl(input.idp_initiated_login_url, current?.kind === 'oidc')
      })
    }
    const now = new Date(this.#now()).toISOString()
    const updated = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.ssoConnections.update(organizationId, connectionId, changes, now, trx),
      (result) => result === undefined
        ? []
        : [{
            event: 'sso_connection.updated',
            outcome: 'success',
            details: {
              organization_id: organizationId,
              connection_id: connectionId,
              fields: Object.keys(input),
              ...(current?.kind === 'oidc' && oidc !== undefined && oidc.issuer !== current.oidc.issuer && {
                oidc_issuer: oidc.issuer, previous_oidc_issuer: current.oidc.issuer
              })
            }
          }])
    if (updated === undefined) throw new Errors.NOT_FOUND('SSO connection')
    return this.view(updated)
  }

  async remove (context: RequestContext, organizationId: string, connectionId: string): Promise<void> {
    holderOf(context, 'changing how the organization signs in')
    const removed = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.ssoConnections.remove(organizationId, connectionId, trx),
      (result) => result
        ? [{ event: 'sso_connection.deleted', outcome: 'success', details: { organization_id: organizationId, connection_id: connectionId } }]
        : [])
    if (!removed) throw new Errors.NOT_FOUND('SSO connection')
  }

  /** The service provider's metadata of a connection (public: IdPs read it unauthenticated). */
  async serviceProviderMetadata (connectionId: string): Promise<string> {
    const connection = await this.deps.ssoConnections.find(connectionId)
    if (connection?.kind !== 'saml') throw new Errors.NOT_FOUND('SSO connection')
    return await serviceProviderMetadata(serviceProviderOf(this.deps.publicUrl, connection.id), connection.idp)
  }
}
