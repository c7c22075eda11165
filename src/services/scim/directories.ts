import type { ScimDirectory, ScimDirectoryCreate, ScimDirectoryUpdate, ScimDirectoryWithToken } from '../../../schemas/scim.js'
import { Errors } from '../../errors.js'
import { clientSecretHash, newClientSecret } from '../../security/client-secrets.js'
import type { ScimDirectoriesRepository, StoredScimDirectory } from '../../store/scim.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'

/** One directory per organization: two directories writing one organization's members would undo each other. */
export const SCIM_DIRECTORIES_PER_ORGANIZATION = 1

/** A directory's bearer token: 256 random bits, recognizable by its prefix in a secret scanner. */
const newToken = () => `scim_${newClientSecret()}`

/** The SCIM base URL of a directory, to give the identity provider. */
export const scimBaseUrl = (publicUrl: string, directoryId: string) => `${publicUrl}/scim/v2/directories/${directoryId}`

export interface ScimDirectoryServiceDependencies {
  scimDirectories: ScimDirectoriesRepository
  audit: AuditTrail
  publicUrl: string
  now?: () => number
}

/**
 * An organization's SCIM directory (docs/api.md, "SCIM provisioning"), managed by its owners
 * (`sso:manage`): its bearer token is shown once, at creation and rotation, and kept as its
 * SHA-256 (a slow hash adds nothing to 256 random bits); the token is the directory's only key.
 */
export class ScimDirectoryService {
  readonly #now: () => number

  constructor (private readonly deps: ScimDirectoryServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  view (directory: StoredScimDirectory): ScimDirectory {
    return {
      id: directory.id,
      organization_id: directory.organizationId,
      name: directory.name,
      base_url: scimBaseUrl(this.deps.publicUrl, directory.id),
      role_mapping: directory.roleMapping,
      default_role: directory.defaultRole,
      created_at: directory.createdAt,
      updated_at: directory.updatedAt
    }
  }

  async create (
    context: RequestContext, organizationId: string, input: ScimDirectoryCreate
  ): Promise<ScimDirectoryWithToken> {
    holderOf(context, 'making a SCIM directory\'s token')
    const token = newToken()
    const settings = { name: input.name, roleMapping: input.role_mapping ?? {}, defaultRole: input.default_role ?? 'member' }
    const created = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.scimDirectories.create(
        organizationId, settings, clientSecretHash(token), this.#timestamp(), SCIM_DIRECTORIES_PER_ORGANIZATION, trx
      ),
      (result) => typeof result === 'object' && 'id' in result
        ? [{ event: 'scim_directory.created', outcome: 'success', details: { organization_id: organizationId, directory_id: result.id } }]
        : [])
    if (created === 'no_organization') throw new Errors.NOT_FOUND('Organization')
    if ('max' in created) throw new Errors.CONFLICT(`An organization holds at most ${created.max} SCIM directory`)
    return { ...this.view(created), token }
  }

  async list (context: RequestContext, organizationId: string): Promise<ScimDirectory[]> {
    callerOf(context)
    return (await this.deps.scimDirectories.listOf(organizationId)).map((directory) => this.view(directory))
  }

  async get (context: RequestContext, organizationId: string, directoryId: string): Promise<ScimDirectory> {
    callerOf(context)
    const directory = await this.deps.scimDirectories.find(directoryId)
    if (directory?.organizationId !== organizationId) throw new Errors.NOT_FOUND('SCIM directory')
    return this.view(directory)
  }

  /** Changes the name or the group mapping; members' roles follow the new mapping at their next change. */
  async update (
    context: RequestContext, organizationId: string, directoryId: string, input: ScimDirectoryUpdate
  ): Promise<ScimDirectory> {
    holderOf(context, 'changing a SCIM directory')
    const changes = {
      ...(input.name !== undefined && { name: input.name }),
      ...(input.role_mapping !== undefined && { roleMapping: input.role_mapping }),
      ...(input.default_role !== undefined && { defaultRole: input.default_role })
    }
    const updated = await this.#change(context, organizationId, directoryId, changes,
      { event: 'scim_directory.updated', fields: Object.keys(input) })
    return this.view(updated)
  }

  /** A new token; the old one stops working at once. */
  async rotateToken (
    context: RequestContext, organizationId: string, directoryId: string
  ): Promise<ScimDirectoryWithToken> {
    holderOf(context, 'making a SCIM directory\'s token')
    const token = newToken()
    const rotated = await this.#change(context, organizationId, directoryId, { tokenHash: clientSecretHash(token) },
      { event: 'scim_directory.token_rotated', fields: [] })
    return { ...this.view(rotated), token }
  }

  /** Removes the directory, its users and groups: the accounts and their memberships stay. */
  async remove (context: RequestContext, organizationId: string, directoryId: string): Promise<void> {
    holderOf(context, 'changing a SCIM directory')
    const removed = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.scimDirectories.remove(organizationId, directoryId, trx),
      (result) => result === undefined
        ? []
        : [{ event: 'scim_directory.deleted', outcome: 'success', details: { organization_id: organizationId, directory_id: directoryId, users: result.length } }])
    if (removed === undefined) throw new Errors.NOT_FOUND('SCIM directory')
  }

  /** The directory a bearer token belongs to, or undefined. */
  async directoryOfToken (token: string): Promise<StoredScimDirectory | undefined> {
    return await this.deps.scimDirectories.findByTokenHash(clientSecretHash(token))
  }

  async #change (
    context: RequestContext, organizationId: string, directoryId: string,
    changes: Parameters<ScimDirectoriesRepository['update']>[2],
    { event, fields }: { event: 'scim_directory.updated' | 'scim_directory.token_rotated', fields: string[] }
  ): Promise<StoredScimDirectory> {
    const now = this.#timestamp()
    const updated = await this.deps.audit.recordChange(context,
      async (trx) => await this.deps.scimDirectories.update(organizationId, directoryId, changes, now, trx),
      (result) => result === undefined
        ? []
        : [{ event, outcome: 'success', details: { organization_id: organizationId, directory_id: directoryId, ...(fields.length > 0 && { fields }) } }])
    if (updated === undefined) throw new Errors.NOT_FOUND('SCIM directory')
    return updated
  }

  #timestamp (): string {
    return new Date(this.#now()).toISOString()
  }
}
