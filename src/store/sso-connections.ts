import type { OrganizationRole } from '../../schemas/organizations.js'
import type { SsoAttributeMapping } from '../../schemas/sso.js'
import type { SamlIdentityProvider } from '../federation/saml-metadata.js'
import { uuidv7 } from './ids.js'
import { holdOrganizationRow } from './organizations.js'
import { atomically, type Db, type SsoConnectionsTable } from './types.js'

/** What every connection has: its organization, and how the IdP's word maps to a member. */
interface StoredConnectionCommon {
  id: string
  organizationId: string
  name: string
  enabled: boolean
  attributeMapping: SsoAttributeMapping
  roleMapping: Record<string, OrganizationRole>
  defaultRole: OrganizationRole
  idpInitiatedLoginUrl: string | null
  createdAt: string
  updatedAt: string
}

/** A connection to a SAML IdP. */
export interface StoredSamlConnection extends StoredConnectionCommon {
  kind: 'saml'
  idp: SamlIdentityProvider
  /** Where the IdP's metadata is read again daily, when it last was and is next due; null: configured otherwise. */
  idpMetadata: IdpMetadataSchedule | null
}

/** The service as a client of an organization's OpenID provider. */
export interface OidcClientSettings {
  issuer: string
  clientId: string
  /** Sealed (src/security/secret-box.ts, purpose ssoClientSecret). */
  sealedClientSecret: string
  tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post'
  scopes: string[]
}

/** A connection to an organization's OpenID provider. */
export interface StoredOidcConnection extends StoredConnectionCommon {
  kind: 'oidc'
  oidc: OidcClientSettings
}

/** A connection as the services use it: its IdP, and how the IdP's word maps to a member. */
export type StoredSsoConnection = StoredSamlConnection | StoredOidcConnection

export interface IdpMetadataSchedule { url: string, readAt: string, dueAt: string, failures: number }

type CommonSettings = Pick<
  StoredConnectionCommon, 'name' | 'enabled' | 'attributeMapping' | 'roleMapping' | 'defaultRole' | 'idpInitiatedLoginUrl'
>

/** A new connection: its IdP, SAML or OpenID. */
export type SsoConnectionSettings = CommonSettings & (
  Pick<StoredSamlConnection, 'idp' | 'idpMetadata'> | Pick<StoredOidcConnection, 'oidc'>
)

/** What an update changes; a connection keeps its kind. */
export type SsoConnectionChanges = Partial<CommonSettings & Pick<StoredSamlConnection, 'idp' | 'idpMetadata'> & Pick<StoredOidcConnection, 'oidc'>>

function fromRow (row: SsoConnectionsTable): StoredSsoConnection {
  const common = {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    enabled: row.enabled === 1,
    attributeMapping: JSON.parse(row.attribute_mapping) as SsoAttributeMapping,
    roleMapping: JSON.parse(row.role_mapping) as Record<string, OrganizationRole>,
    defaultRole: row.default_role,
    idpInitiatedLoginUrl: row.idp_initiated_login_url,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  }
  if (row.kind === 'oidc') {
    return {
      ...common,
      kind: 'oidc',
      oidc: {
        issuer: row.oidc_issuer ?? '',
        clientId: row.oidc_client_id ?? '',
        sealedClientSecret: row.oidc_client_secret ?? '',
        tokenEndpointAuthMethod: row.oidc_token_endpoint_auth_method ?? 'client_secret_basic',
        scopes: JSON.parse(row.oidc_scopes ?? '[]') as string[]
      }
    }
  }
  return {
    ...common,
    kind: 'saml',
    idp: {
      entityId: row.idp_entity_id, ssoUrl: row.idp_sso_url, certificates: JSON.parse(row.idp_certificates) as string[]
    },
    idpMetadata: row.idp_metadata_url === null || row.idp_metadata_read_at === null || row.idp_metadata_due_at === null
      ? null
      : {
          url: row.idp_metadata_url,
          readAt: row.idp_metadata_read_at,
          dueAt: row.idp_metadata_due_at,
          failures: row.idp_metadata_failures
        }
  }
}

function toColumns (settings: SsoConnectionChanges): Partial<SsoConnectionsTable> {
  return {
    ...(settings.name !== undefined && { name: settings.name }),
    ...(settings.enabled !== undefined && { enabled: settings.enabled ? 1 : 0 }),
    ...(settings.idp !== undefined && {
      idp_entity_id: settings.idp.entityId,
      idp_sso_url: settings.idp.ssoUrl,
      idp_certificates: JSON.stringify(settings.idp.certificates)
    }),
    ...(settings.oidc !== undefined && {
      oidc_issuer: settings.oidc.issuer,
      oidc_client_id: settings.oidc.clientId,
      oidc_client_secret: settings.oidc.sealedClientSecret,
      oidc_token_endpoint_auth_method: settings.oidc.tokenEndpointAuthMethod,
      oidc_scopes: JSON.stringify(settings.oidc.scopes)
    }),
    ...(settings.attributeMapping !== undefined && { attribute_mapping: JSON.stringify(settings.attributeMapping) }),
    ...(settings.roleMapping !== undefined && { role_mapping: JSON.stringify(settings.roleMapping) }),
    ...(settings.defaultRole !== undefined && { default_role: settings.defaultRole }),
    ...(settings.idpInitiatedLoginUrl !== undefined && { idp_initiated_login_url: settings.idpInitiatedLoginUrl }),
    ...(settings.idpMetadata !== undefined && {
      idp_metadata_url: settings.idpMetadata?.url ?? null,
      idp_metadata_read_at: settings.idpMetadata?.readAt ?? null,
      idp_metadata_due_at: settings.idpMetadata?.dueAt ?? null,
      idp_metadata_failures: settings.idpMetadata?.failures ?? 0
    })
  }
}

/** The columns of a new connection: an OpenID one leaves the SAML IdP's empty. */
function newColumns (settings: SsoConnectionSettings): Partial<SsoConnectionsTable> {
  if ('oidc' in settings) {
    return { ...toColumns(settings), kind: 'oidc', idp_entity_id: '', idp_sso_url: '', idp_certificates: '[]' }
  }
  return { ...toColumns(settings), kind: 'saml' }
}

/** Organizations' connections to their own identity providers (docs/api.md, "Enterprise sign-in"). */
export class SsoConnectionsRepository {
  constructor (private readonly db: Db) {}

  /**
   * Adds a connection unless the organization is gone or holds `max` (its row held, so that
   * creations at once are counted one after another).
   */
  async create (
    organizationId: string, settings: SsoConnectionSettings, now: string, max: number, db: Db = this.db
  ): Promise<StoredSsoConnection | 'no_organization' | { max: number }> {
    return await atomically(db, async (trx) => {
      if (await holdOrganizationRow(trx, organizationId) === undefined) return 'no_organization'
      const held = await trx.selectFrom('sso_connections').select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('organization_id', '=', organizationId).executeTakeFirst()
      if (Number(held?.count ?? 0) >= max) return { max }
      const row = {
        id: uuidv7(), organization_id: organizationId, ...newColumns(settings), created_at: now, updated_at: now
      } as SsoConnectionsTable
      await trx.insertInto('sso_connections').values(row).execute()
      return fromRow(row)
    })
  }

  /** The organization's connections, oldest first (sso_connections_organization_id_created_at). */
  async listOf (organizationId: string, db: Db = this.db): Promise<StoredSsoConnection[]> {
    const rows = await db.selectFrom('sso_connections').selectAll().where('organization_id', '=', organizationId)
      .orderBy('created_at').orderBy('id').execute()
    return rows.map(fromRow)
  }

  /** A connection by its id alone (the sign-in routes name none other), or undefined. */
  async find (connectionId: string, db: Db = this.db): Promise<StoredSsoConnection | undefined> {
    const row = await db.selectFrom('sso_connections').selectAll().where('id', '=', connectionId).executeTakeFirst()
    return row === undefined ? undefined : fromRow(row)
  }

  async update (
    organizationId: string, connectionId: string, changes: SsoConnectionChanges, now: string, db: Db = this.db
  ): Promise<StoredSsoConnection | undefined> {
    return await atomically(db, async (trx) => {
      await trx.updateTable('sso_connections').set({ ...toColumns(changes), updated_at: now })
        .where('organization_id', '=', organizationId).where('id', '=', connectionId).execute()
      const connection = await this.find(connectionId, trx)
      return connection?.organizationId === organizationId ? connection : undefined
    })
  }

  /**
   * Connections read by metadata URL whose next read is due at `now`, the longest due first
   * (sso_connections_idp_metadata_due_at, partial on the URL).
   */
  async metadataDue (now: string, limit: number, db: Db = this.db): Promise<StoredSamlConnection[]> {
    const rows = await db.selectFrom('sso_connections').selectAll()
      .where('idp_metadata_url', 'is not', null).where('idp_metadata_due_at', '<=', now)
      .orderBy('idp_metadata_due_at').limit(limit).execute()
    return rows.map(fromRow).filter((connection) => connection.kind === 'saml')
  }

  /**
   * Takes the read of a connection's metadata that was due at `dueAt`, by moving it to `until`:
   * whether this caller took it (another instance that read the same row first took it instead).
   */
  async claimMetadataRead (connectionId: string, dueAt: string, until: string, db: Db = this.db): Promise<boolean> {
    const claimed = await db.updateTable('sso_connections').set({ idp_metadata_due_at: until })
      .where('id', '=', connectionId).where('idp_metadata_due_at', '=', dueAt).executeTakeFirst()
    return claimed.numUpdatedRows > 0n
  }

  /**
   * Records a read of the metadata taken by `claimMetadataRead` (its URL, and the time it held the
   * read until): the IdP it describes and when it is next due, or (no `idp`) a failure; nothing
   * when the connection has changed since (an owner gave it a URL again, or something else). The
   * connection as it now is, or undefined.
   */
  async metadataRead (
    connectionId: string,
    claim: { url: string, heldUntil: string },
    read: { idp?: SamlIdentityProvider, at: string, dueAt: string, failures: number },
    db: Db = this.db
  ): Promise<StoredSsoConnection | undefined> {
    return await atomically(db, async (trx) => {
      const changed = await trx.updateTable('sso_connections')
        .set({
          ...(read.idp !== undefined && {
            ...toColumns({ idp: read.idp }), idp_metadata_read_at: read.at, updated_at: read.at
          }),
          idp_metadata_due_at: read.dueAt,
          idp_metadata_failures: read.failures
        })
        .where('id', '=', connectionId).where('idp_metadata_url', '=', claim.url)
        .where('idp_metadata_due_at', '=', claim.heldUntil).executeTakeFirst()
      return changed.numUpdatedRows > 0n ? await this.find(connectionId, trx) : undefined
    })
  }

  /** Removes a connection: whether there was one. */
  async remove (organizationId: string, connectionId: string, db: Db = this.db): Promise<boolean> {
    const removed = await db.deleteFrom('sso_connections').where('organization_id', '=', organizationId).where('id', '=', connectionId)
      .executeTakeFirst()
    return removed.numDeletedRows > 0n
  }
}
