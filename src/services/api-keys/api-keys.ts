import type { ApiKey, ApiKeyCreate, ApiKeyScope, ApiKeyWithSecret, OrganizationApiKeyCreate } from '../../../schemas/api-keys.js'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import { PERMISSIONS, type Permission } from '../../../schemas/rbac.js'
import { Errors, validationFailed } from '../../errors.js'
import { apiKeyPrefixOf, newApiKey } from '../../security/api-key-format.js'
import { apiKeyHash, apiKeyRevocationId } from '../../security/api-keys.js'
import { mayGrant, organizationPermissionsOf } from '../../security/organization-permissions.js'
import { hasPermission } from '../../security/permissions.js'
import { DELETED_KEY_REVOCATION_MS, type ApiKeyOwner, type ApiKeysRepository, type StoredApiKey } from '../../store/api-keys.js'
import { uuidv7 } from '../../store/ids.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import type { Notices } from '../messaging/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'
import { actingRoleIn } from '../organizations/index.js'
import { claimedAccount, type InlineProof, type ReauthenticationService } from '../sign-in/index.js'

/** How many keys a person or an organization may hold. */
export const MAX_API_KEYS = 50

export interface ApiKeyServiceDependencies {
  apiKeys: ApiKeysRepository
  users: UsersRepository
  organizations: Pick<OrganizationsRepository, 'roleOf'>
  reauthentication: Pick<ReauthenticationService, 'require'>
  audit: AuditTrail
  notices: Notices
  /** Adds an identifier to the revocation list every instance holds. */
  revokeAccessToken: (jti: string, expiresAt: Date) => Promise<void>
  now?: () => number
}

function isPermission (scope: ApiKeyScope): scope is Permission {
  return (PERMISSIONS as readonly string[]).includes(scope)
}

function apiKeyOf (key: StoredApiKey): ApiKey {
  return {
    id: key.id,
    name: key.name,
    prefix: apiKeyPrefixOf(key.id),
    scopes: key.scopes,
    user_id: key.userId,
    organization_id: key.organizationId,
    role: key.role,
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    last_used_at: key.lastUsedAt
  }
}

interface KeySettings {
  name: string
  scopes: ApiKeyScope[]
  expiresAt: string | undefined
  role: OrganizationRole | null
  /** A person's key: their address, told of it as of every sensitive change. */
  notify?: string
}

/** The organization's keys when one is named (its route's guard admitted the caller), else the caller's. */
function ownerOf (context: RequestContext, organizationId: string | undefined): ApiKeyOwner {
  return organizationId === undefined ? { userId: callerOf(context).id } : { organizationId }
}

/**
 * API keys (docs/api.md, "API keys"). Making or deleting one is the account holder's, signed
 * in: never an API key's nor an impersonation's (holderOf), and making one is a
 * sensitive change (docs/security.md, "Sensitive changes"): a stolen access token must not
 * outlive its 15 minutes as a key. Deleting one stops it on every instance at once.
 */
export class ApiKeyService {
  readonly #now: () => number

  constructor (private readonly deps: ApiKeyServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** A key acting as the caller with the scopes named, each a permission the caller holds. */
  async createForPerson (
    context: RequestContext, { name, scopes, expires_at: expiresAt, ...proof }: ApiKeyCreate
  ): Promise<ApiKeyWithSecret> {
    const { caller, user } = await this.#holder(context, proof)
    const lacked = scopes.find((scope) => isPermission(scope) && !hasPermission(caller, scope))
    if (lacked !== undefined) throw new Errors.FORBIDDEN(lacked)
    const settings = { name, scopes, expiresAt, role: null, notify: user.email }
    return await this.#create(context, { userId: caller.id }, settings)
  }

  /** A key acting in the organization with a role no higher than the caller's own. */
  async createForOrganization (
    context: RequestContext,
    organizationId: string,
    { name, role, scopes, expires_at: expiresAt, ...proof }: OrganizationApiKeyCreate
  ): Promise<ApiKeyWithSecret> {
    await this.#holder(context, proof)
    const acting = await actingRoleIn(context, organizationId, this.deps.organizations)
    if (!mayGrant(acting, role)) throw new Errors.FORBIDDEN(`the ${role} role`)
    const granted = organizationPermissionsOf(role)
    const outside = (scopes ?? []).find((scope) => !(granted as readonly string[]).includes(scope))
    if (outside !== undefined) {
      throw validationFailed([{ path: '/scopes', message: `${outside} is not a permission of the ${role} role` }])
    }
    return await this.#create(context, { organizationId }, { name, scopes: scopes ?? [...granted], expiresAt, role })
  }

  /** The caller's keys, or the organization's. */
  async list (context: RequestContext, organizationId?: string): Promise<ApiKey[]> {
    return (await this.deps.apiKeys.listOf(ownerOf(context, organizationId))).map(apiKeyOf)
  }

  /**
   * Deletes the caller's key, or the organization's, and refuses it on every instance from now;
   * deleting one that is not there succeeds.
   */
  async remove (context: RequestContext, id: string, organizationId?: string): Promise<void> {
    holderOf(context, 'deleting an API key')
    const owner = ownerOf(context, organizationId)
    const deleted = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.apiKeys.delete(owner, id, trx),
      (found) => found ? [{ event: 'api_key.deleted', outcome: 'success', ...this.#entry(owner, id) }] : [])
    if (!deleted) return
    await this.deps.revokeAccessToken(apiKeyRevocationId(id), new Date(this.#now() + DELETED_KEY_REVOCATION_MS))
  }

  /** The caller and their account, when they may make a key: signed in themselves, address and change proved. */
  async #holder (context: RequestContext, proof: InlineProof) {
    const caller = holderOf(context, 'making an API key')
    const user = await claimedAccount(this.deps.users, caller.id)
    await this.deps.reauthentication.require(context, proof)
    return { caller, user }
  }

  async #create (context: RequestContext, owner: ApiKeyOwner, settings: KeySettings): Promise<ApiKeyWithSecret> {
    const now = this.#now()
    if (settings.expiresAt !== undefined && Date.parse(settings.expiresAt) <= now) {
      throw validationFailed([{ path: '/expires_at', message: 'must be in the future' }])
    }
    const id = uuidv7()
    const key = newApiKey(id)
    const row = {
      id,
      userId: 'userId' in owner ? owner.userId : null,
      organizationId: 'organizationId' in owner ? owner.organizationId : null,
      role: settings.role,
      name: settings.name,
      keyHash: apiKeyHash(key),
      scopes: settings.scopes,
      createdBy: callerOf(context).id,
      createdAt: new Date(now).toISOString(),
      expiresAt: settings.expiresAt === undefined ? null : new Date(settings.expiresAt).toISOString()
    }
    const { apiKeys, notices, audit } = this.deps
    const made = (result: Awaited<ReturnType<ApiKeysRepository['create']>>) => typeof result === 'object' && 'id' in result
    const created = await audit.recordChange(context, async (trx) => {
      const result = await apiKeys.create(row, MAX_API_KEYS, trx)
      if (settings.notify !== undefined && made(result)) await notices.add(settings.notify, 'api_key_created', trx, `Its name: ${settings.name}.`)
      return result
    }, (result) => made(result)
      ? [{ event: 'api_key.created', outcome: 'success', ...this.#entry(owner, id, { scopes: row.scopes, role: row.role }) }]
      : [])
    if (created === 'no_organization') throw new Errors.NOT_FOUND('Organization')
    if ('max' in created) throw new Errors.CONFLICT(`At most ${created.max} API keys are held at once: delete one first`)
    if (settings.notify !== undefined) notices.deliver()
    return { ...apiKeyOf(created), key }
  }

  /** What an entry about a key names: the key (by id: `key` would be redacted), and whose it is. */
  #entry (owner: ApiKeyOwner, id: string, more: Record<string, unknown> = {}) {
    return 'userId' in owner
      ? { targetId: owner.userId, details: { credential_id: id, ...more } }
      : { details: { credential_id: id, organization_id: owner.organizationId, ...more } }
  }
}
