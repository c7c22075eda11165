import {
  type DynamicRegistration, type DynamicRegistrationResponse, OAUTH_CLIENT_FIELDS, type OAuthClient,
  type OAuthClientCreate, type OAuthClientUpdate, type OAuthClientWithSecret, type OAuthGrantType, STANDARD_SCOPES,
  STANDARD_SCOPES_LISTED
} from '../../../schemas/oauth-clients.js'
import type { ValidationIssue } from '../../../schemas/errors.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, validationFailed } from '../../errors.js'
import { clientSecretHash, newClientId, newClientSecret } from '../../security/client-secrets.js'
import { type ClientChanges, clientOf, type OAuthClientsRepository } from '../../store/oauth-clients.js'
import type { AuditTrail } from '../audit/index.js'
import { holderOf, type RequestContext } from '../context.js'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'
/** The hosts `http:` may name (RFC 8252, 7.3: a native app's loopback redirect). */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
const STANDARD = new Set<string>(STANDARD_SCOPES)

/** What the rules of a client are about: its registration, as created or as a change would leave it. */
export interface ClientRegistration {
  confidential: boolean
  redirect_uris: string[]
  post_logout_redirect_uris: string[]
  grant_types: OAuthGrantType[]
  scopes: string[]
  id_token_signed_response_alg: OAuthClient['id_token_signed_response_alg']
}

function isControl (char: string): boolean {
  const code = char.charCodeAt(0)
  return code < 0x20 || code === 0x7f
}

/**
 * Why `value` may not be a redirect URI (docs/api.md, "OAuth clients"), or null: absolute,
 * without a fragment or user info, and `https:`, `http:` to a loopback host, or a private-use
 * scheme with a dot (RFC 8252, 7.1: `com.example.app:/callback`). Any other scheme, as
 * `javascript:` or `data:`, would run or show something in the browser sent there.
 */
export function redirectUriProblem (value: string): string | null {
  if (/\s/.test(value) || [...value].some(isControl)) return 'must not contain spaces or control characters'
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute URI'
  }
  if (value.includes('#')) return 'must not have a fragment'
  if (url.username !== '' || url.password !== '') return 'must not contain a user name or password'
  const scheme = url.protocol.slice(0, -1)
  if (scheme === 'https') return null
  if (scheme === 'http') {
    return LOOPBACK_HOSTS.has(url.hostname) ? null : 'http: only to a loopback host (127.0.0.1, [::1], localhost): use https:'
  }
  if (scheme.includes('.')) return null
  return `the scheme ${scheme}: is not accepted: https:, http: to a loopback host, or a private-use scheme with a dot (com.example.app:/callback)`
}

/** Every way `client` breaks the registration rules (docs/api.md, "OAuth clients"), each at its field. */
export function registrationProblems (
  client: ClientRegistration,
  customScopes: ReadonlySet<string>
): ValidationIssue[] {
  const issues: ValidationIssue[] = []
  for (const field of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
    client[field].forEach((uri, index) => {
      const problem = redirectUriProblem(uri)
      if (problem !== null) issues.push({ path: `/${field}/${index}`, message: problem })
    })
  }
  const grants = new Set(client.grant_types)
  if (grants.has('authorization_code') && client.redirect_uris.length === 0) {
    issues.push({ path: '/redirect_uris', message: 'authorization_code needs at least one redirect URI' })
  }
  if (grants.has('refresh_token') && !grants.has('authorization_code') && !grants.has(DEVICE_GRANT)) {
    issues.push({ path: '/grant_types', message: `refresh_token needs authorization_code or ${DEVICE_GRANT}` })
  }
  if (grants.has('client_credentials') && !client.confidential) {
    issues.push({ path: '/grant_types', message: 'client_credentials is only for a confidential client' })
  }
  client.scopes.forEach((scope, index) => {
    if (STANDARD.has(scope)) return
    if (!customScopes.has(scope)) {
      issues.push({ path: `/scopes/${index}`, message: `"${scope}" is not a scope of this service: ${STANDARD_SCOPES_LISTED}, or one of AUTHORIZATION_SERVER_SCOPES` })
    } else if (!grants.has('client_credentials')) {
      issues.push({ path: `/scopes/${index}`, message: `"${scope}" is a custom scope: only for a client with client_credentials (else ${STANDARD_SCOPES_LISTED})` })
    }
  })
  return issues
}

function assertRegistration (client: ClientRegistration, customScopes: ReadonlySet<string>): void {
  const issues = registrationProblems(client, customScopes)
  if (issues.length > 0) throw validationFailed(issues)
}

/**
 * A field's name in audit details: as the API names it, but the ID-token algorithm's, which the
 * audit log's redaction would hide (its name holds `token`: `signing_algorithm`; docs/api.md, "Redaction").
 */
function auditKey (field: keyof OAuthClientUpdate): string {
  return field === 'id_token_signed_response_alg' ? 'signing_algorithm' : field
}

/**
 * Registration metadata the authorization server cannot honour, with why: refused rather than
 * registered and ignored (RFC 7591, 3.2.2), so that an application does not expect what it will
 * not get (signed userinfo, request objects, pairwise subjects, encrypted tokens).
 */
const UNSUPPORTED_METADATA: Record<string, string> = {
  userinfo_signed_response_alg: 'signed userinfo responses are not offered: userinfo answers JSON',
  userinfo_encrypted_response_alg: 'encrypted userinfo responses are not offered',
  id_token_encrypted_response_alg: 'encrypted ID tokens are not offered',
  request_object_signing_alg: 'request objects are not offered (request_parameter_supported is false)',
  request_object_encryption_alg: 'request objects are not offered',
  request_uris: 'request objects are not offered (request_uri_parameter_supported is false)',
  sector_identifier_uri: 'pairwise subjects are not offered (subject_types_supported is public)',
  token_endpoint_auth_signing_alg: 'client authentication by a signed JWT is not offered'
}

/** The first metadata of `input` the server cannot honour, as a validation issue, or null. */
function unsupportedMetadata (input: Record<string, unknown>): ValidationIssue | null {
  if (input.subject_type !== undefined && input.subject_type !== 'public') {
    return { path: '/subject_type', message: 'only public subjects are offered (subject_types_supported)' }
  }
  const member = Object.keys(UNSUPPORTED_METADATA).find((name) => input[name] !== undefined)
  return member === undefined ? null : { path: `/${member}`, message: UNSUPPORTED_METADATA[member] ?? '' }
}

const LIST_FIELDS = ['redirect_uris', 'post_logout_redirect_uris', 'grant_types', 'scopes'] as const

export interface OAuthClientServiceDependencies {
  clients: OAuthClientsRepository
  audit: AuditTrail
  cursors: CursorCodec
  /** The scopes machine clients may be given (AUTHORIZATION_SERVER_SCOPES). */
  customScopes: readonly string[]
  now?: () => number
}

/**
 * The applications that sign people in with the service (docs/api.md, "OAuth clients"): the
 * route declares the `admin` permission; this service keeps the registration rules, the secret
 * shown once and kept as its hash, what disabling and deleting revoke, and the audit entries.
 */
export class OAuthClientService {
  readonly #now: () => number
  readonly #customScopes: ReadonlySet<string>

  constructor (private readonly deps: OAuthClientServiceDependencies) {
    this.#now = deps.now ?? Date.now
    this.#customScopes = new Set(deps.customScopes)
  }

  /**
   * Registers a client; a confidential one's secret is in this answer only. Through the admin
   * API its creator is the caller; from the command line (`npm run client:create`) no one.
   */
  async create (
    context: RequestContext,
    input: OAuthClientCreate,
    through: 'admin_api' | 'command_line' = 'admin_api'
  ): Promise<OAuthClientWithSecret> {
    const registration: ClientRegistration = {
      confidential: input.confidential !== false,
      redirect_uris: input.redirect_uris ?? [],
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
      grant_types: input.grant_types,
      scopes: input.scopes,
      id_token_signed_response_alg: input.id_token_signed_response_alg ?? 'RS256'
    }
    const creator = through === 'admin_api' ? holderOf(context, 'registering an application').id : null
    return await this.#register(context, input.name, registration, creator, through)
  }

  /**
   * Dynamic client registration (RFC 7591, docs/api.md "Authorization server"): an application
   * registering itself with the operator's initial access token, held to the same rules as one
   * an administrator registers; no custom scope (those are for clients an administrator trusts).
   */
  async registerDynamically (
    context: RequestContext,
    input: DynamicRegistration
  ): Promise<DynamicRegistrationResponse> {
    const unsupported = unsupportedMetadata(input as Record<string, unknown>)
    if (unsupported !== null) throw validationFailed([unsupported])
    const method = input.token_endpoint_auth_method ?? 'client_secret_basic'
    const registration: ClientRegistration = {
      confidential: method !== 'none',
      redirect_uris: input.redirect_uris ?? [],
      post_logout_redirect_uris: input.post_logout_redirect_uris ?? [],
      grant_types: input.grant_types ?? ['authorization_code'],
      scopes: input.scope?.split(' ') ?? ['openid'],
      id_token_signed_response_alg: input.id_token_signed_response_alg ?? 'RS256'
    }
    const custom = registration.scopes.findIndex((scope) => !STANDARD.has(scope))
    if (custom >= 0) throw validationFailed([{ path: `/scopes/${custom}`, message: `"${registration.scopes[custom] ?? ''}" cannot be registered dynamically: ${STANDARD_SCOPES_LISTED}` }])
    const name = input.client_name ?? 'Unnamed application'
    const client = await this.#register(context, name, registration, null, 'dynamic_registration')
    return {
      client_id: client.id,
      ...(client.client_secret !== null && {
        client_secret: client.client_secret, client_secret_expires_at: 0 as const
      }),
      client_id_issued_at: Math.floor(Date.parse(client.created_at) / 1000),
      client_name: client.name,
      redirect_uris: client.redirect_uris,
      post_logout_redirect_uris: client.post_logout_redirect_uris,
      grant_types: client.grant_types,
      response_types: client.grant_types.includes('authorization_code') ? ['code'] : [],
      token_endpoint_auth_method: client.confidential ? method : 'none',
      id_token_signed_response_alg: client.id_token_signed_response_alg,
      scope: client.scopes.join(' ')
    }
  }

  async #register (
    context: RequestContext,
    name: string,
    registration: ClientRegistration,
    createdBy: string | null,
    through: 'admin_api' | 'command_line' | 'dynamic_registration'
  ): Promise<OAuthClientWithSecret> {
    assertRegistration(registration, this.#customScopes)
    const secret = registration.confidential ? newClientSecret() : null
    const now = new Date(this.#now()).toISOString()
    const client = await this.deps.audit.recordChange(context, async (trx) => await this.deps.clients.create({
      id: newClientId(),
      name,
      secret_hash: secret === null ? null : clientSecretHash(secret),
      redirect_uris: JSON.stringify(registration.redirect_uris),
      post_logout_redirect_uris: JSON.stringify(registration.post_logout_redirect_uris),
      grant_types: JSON.stringify(registration.grant_types),
      scopes: JSON.stringify(registration.scopes),
      id_token_signed_response_alg: registration.id_token_signed_response_alg,
      disabled_at: null,
      created_by: createdBy,
      created_at: now,
      updated_at: now
    }, trx), (created) => [{
      event: 'oauth_client.created',
      outcome: 'success',
      details: {
        client_id: created.id,
        name: created.name,
        through,
        confidential: created.confidential,
        grant_types: created.grant_types,
        scopes: created.scopes,
        [auditKey('id_token_signed_response_alg')]: created.id_token_signed_response_alg,
        redirect_uris: created.redirect_uris,
        post_logout_redirect_uris: created.post_logout_redirect_uris
      }
    }])
    return { ...client, client_secret: secret }
  }

  /**
   * Newest first: without a `sort`, as `sort=-created_at` (whose tie-breaker is `-id`), so that
   * every page, a cursor's too, is a range of oauth_clients_created_at_id read backwards.
   */
  async list (query: CollectionQueryInput) {
    return await collectionPage({ ...query, sort: query.sort ?? ['-created_at'] },
      { ...OAUTH_CLIENT_FIELDS, defaultSort: [{ field: 'created_at', descending: true }], scope: 'oauth-clients' },
      this.deps.cursors, async (request) => await this.deps.clients.list(request))
  }

  async get (id: string): Promise<OAuthClient> {
    const client = await this.deps.clients.find(id)
    if (client === undefined) throw new Errors.NOT_FOUND('OAuth client')
    return client
  }

  /**
   * Changes a client; the rules hold for the client as the change leaves it. Disabling it
   * revokes, in the same transaction, everything the authorization server issued to it. A
   * change that changes nothing writes nothing, and is not audited.
   */
  async update (context: RequestContext, id: string, input: OAuthClientUpdate): Promise<OAuthClient> {
    holderOf(context, 'changing an application\'s registration')
    const { clients, audit } = this.deps
    const now = new Date(this.#now()).toISOString()
    const result = await audit.recordChange(context, async (trx) => {
      const row = await clients.findById(id, trx)
      if (row === undefined) return undefined
      const current = clientOf(row)
      const next = { ...current, ...input }
      assertRegistration(next, this.#customScopes)
      const changed = (Object.keys(input) as Array<keyof OAuthClientUpdate>)
        .filter((field) => JSON.stringify(input[field]) !== JSON.stringify(current[field]))
      // Nothing to write: the client as it is, its updated_at unchanged.
      if (changed.length === 0) return { client: clientOf(row), removed: 0, changed, previousName: current.name }
      const lists = LIST_FIELDS.filter((field) => input[field] !== undefined)
        .map((field) => [field, JSON.stringify(input[field])])
      const changes: ClientChanges = {
        ...(input.name !== undefined && { name: input.name }),
        ...Object.fromEntries(lists),
        ...(input.id_token_signed_response_alg !== undefined && {
          id_token_signed_response_alg: input.id_token_signed_response_alg
        }),
        ...(input.disabled !== undefined && { disabled: input.disabled })
      }
      const updated = await clients.update(id, changes, now, trx)
      return updated === undefined ? undefined : { ...updated, changed, previousName: current.name }
    }, (result) => {
      if (result === undefined || result.changed.length === 0) return []
      const { client, changed, previousName, removed } = result
      return [{
        event: 'oauth_client.updated',
        outcome: 'success',
        details: {
          client_id: id,
          name: client.name,
          changed,
          ...Object.fromEntries(changed.map((field) => [auditKey(field), client[field]])),
          ...(changed.includes('name') && { previous_name: previousName }),
          ...(client.disabled && changed.includes('disabled') && { artifacts_removed: removed })
        }
      }]
    })
    if (result === undefined) throw new Errors.NOT_FOUND('OAuth client')
    return result.client
  }

  /**
   * A new secret for a confidential client, shown this once; the previous one stops working at
   * once. What was issued with the previous one stays (disable the client to revoke it).
   */
  async rotateSecret (context: RequestContext, id: string): Promise<OAuthClientWithSecret> {
    holderOf(context, 'making an application\'s secret')
    const { clients, audit } = this.deps
    const secret = newClientSecret()
    const now = new Date(this.#now()).toISOString()
    const client = await audit.recordChange(context, async (trx) => {
      const row = await clients.findById(id, trx)
      if (row === undefined) throw new Errors.NOT_FOUND('OAuth client')
      if (row.secret_hash === null) throw new Errors.CONFLICT('A public client has no secret to rotate')
      return await clients.replaceSecretHash(id, clientSecretHash(secret), now, trx)
    }, (rotated) => {
      if (rotated === undefined) return []
      return [{ event: 'oauth_client.secret_rotated', outcome: 'success', details: { client_id: id, name: rotated.name } }]
    })
    if (client === undefined) throw new Errors.NOT_FOUND('OAuth client')
    return { ...client, client_secret: secret }
  }

  /** Deletes a client with everything issued to it; deleting one that does not exist succeeds too. */
  async remove (context: RequestContext, id: string): Promise<void> {
    const { clients, audit } = this.deps
    await audit.recordChange(context, async (trx) => {
      const row = await clients.findById(id, trx)
      if (row === undefined) return undefined
      const deleted = await clients.delete(id, trx)
      return deleted === undefined ? undefined : { name: row.name, removed: deleted.removed }
    }, (deleted) => {
      if (deleted === undefined) return []
      const details = { client_id: id, name: deleted.name, artifacts_removed: deleted.removed }
      return [{ event: 'oauth_client.deleted', outcome: 'success', details }]
    })
  }
}
