import type { ScimGroup, ScimGroupInput, ScimListQuery, ScimPatch } from '../../../schemas/scim.js'
import { Errors, validationFailed } from '../../errors.js'
import { canonicalUuid, isUuid, uuidv7 } from '../../store/ids.js'
import type { GroupMember, ScimResourcesRepository } from '../../store/scim.js'
import type { ScimGroupsTable } from '../../store/types.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import { directoryOf, type DirectoryStanding, type RequestContext } from '../context.js'
import { scimBaseUrl } from './directories.js'
import { comparisonsOf, GROUP_FILTER_ATTRIBUTES } from './filter.js'
import type { ScimMemberships } from './memberships.js'
import { groupView, listResponse, pageOf, patched, resourceId, type ScimList } from './resources.js'

export interface ScimGroupServiceDependencies {
  scimResources: ScimResourcesRepository
  memberships: ScimMemberships
  audit: AuditTrail
  publicUrl: string
  now?: () => number
}

/**
 * SCIM 2.0 Groups of an organization's directory (docs/api.md, "SCIM provisioning"): a group's
 * display name maps its members to an organization role (the directory's `role_mapping`), so
 * every change of a group's name or members gives the members it touches the role their groups
 * now map to.
 */
export class ScimGroupService {
  readonly #now: () => number

  constructor (private readonly deps: ScimGroupServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  #base (directory: DirectoryStanding): string {
    return scimBaseUrl(this.deps.publicUrl, directory.id)
  }

  #timestamp (): string {
    return new Date(this.#now()).toISOString()
  }

  async listGroups (context: RequestContext, query: ScimListQuery): Promise<ScimList<ScimGroup>> {
    const directory = directoryOf(context)
    const comparisons = comparisonsOf(query.filter, GROUP_FILTER_ATTRIBUTES)
    const { startIndex, offset, limit } = pageOf(query)
    const page = await this.deps.scimResources.listGroups(directory.id, comparisons, offset, limit)
    const withMembers = !/(^|,)\s*members\s*(,|$)/i.test(query.excludedAttributes ?? '')
    const members = withMembers ? await this.deps.scimResources.membersOf(page.rows.map((row) => row.id)) : []
    const membersOf = (row: ScimGroupsTable) => withMembers
      ? members.filter((member) => member.group_id === row.id)
      : null
    const groups = page.rows.map((row) => groupView(row, membersOf(row), this.#base(directory)))
    return listResponse(page.total, startIndex, groups)
  }

  async getGroup (context: RequestContext, id: string, query: Pick<ScimListQuery, 'excludedAttributes'> = {}): Promise<ScimGroup> {
    const directory = directoryOf(context)
    const group = await this.#group(directory, id)
    const withMembers = !/(^|,)\s*members\s*(,|$)/i.test(query.excludedAttributes ?? '')
    const members = withMembers ? await this.deps.scimResources.membersOf([group.id]) : null
    return groupView(group, members, this.#base(directory))
  }

  async createGroup (context: RequestContext, input: ScimGroupInput): Promise<ScimGroup> {
    const directory = directoryOf(context)
    const now = this.#timestamp()
    const row: ScimGroupsTable = {
      id: uuidv7(),
      directory_id: directory.id,
      display_name: input.displayName,
      external_id: input.externalId ?? null,
      created_at: now,
      updated_at: now
    }
    return await this.#writeGroup(context, directory, { created: row }, () => input, 'scim.group_created')
  }

  async replaceGroup (context: RequestContext, id: string, input: ScimGroupInput): Promise<ScimGroup> {
    const directory = directoryOf(context)
    return await this.#writeGroup(context, directory, { id: resourceId(id, 'Group') }, () => input, 'scim.group_updated')
  }

  async patchGroup (context: RequestContext, id: string, patch: ScimPatch): Promise<ScimGroup> {
    const directory = directoryOf(context)
    return await this.#writeGroup(context, directory, { id: resourceId(id, 'Group') }, (current, members) =>
      patched('group', groupView(current, members, this.#base(directory)), patch), 'scim.group_updated')
  }

  /** Removes a group: its members' roles follow the groups they are left in. */
  async deleteGroup (context: RequestContext, id: string): Promise<void> {
    const directory = directoryOf(context)
    const resource = resourceId(id, 'Group')
    const { scimResources } = this.deps
    const outcome = await this.deps.audit.recordChange(context, async (trx) => {
      const current = await scimResources.holdGroup(directory.id, resource, trx)
      if (current === undefined) throw new Errors.NOT_FOUND('Group')
      const former = (await scimResources.membersOf([current.id], trx)).map((member) => member.scim_user_id)
      await scimResources.removeGroup(directory.id, current.id, trx)
      const memberships = await this.deps.memberships.rejoin(directory, former, trx)
      return { ...memberships, entries: [this.#groupEntry('scim.group_deleted', directory, current), ...memberships.entries] }
    }, (result) => result.entries)
    await outcome.revokeAccess()
  }

  /**
   * A group written (created, or replaced by a PUT or a PATCH's result): its name and, when
   * the input names them, its members, who must be the directory's users; every member whose
   * groups changed (all of them when the name did) takes the role the groups now map to. An
   * existing group's row is held from the read of `inputOf` to the commit: writes of one group
   * at once apply one after another, each from the members the other left.
   */
  async #writeGroup (
    context: RequestContext, directory: DirectoryStanding, target: { created: ScimGroupsTable } | { id: string },
    inputOf: (current: ScimGroupsTable, members: GroupMember[]) => ScimGroupInput,
    event: 'scim.group_created' | 'scim.group_updated'
  ): Promise<ScimGroup> {
    const { scimResources } = this.deps
    const outcome = await this.deps.audit.recordChange(context, async (trx) => {
      const row = 'id' in target ? await scimResources.holdGroup(directory.id, target.id, trx) : target.created
      if (row === undefined) throw new Errors.NOT_FOUND('Group')
      const current = 'id' in target ? row : null
      const members = current === null ? [] : await scimResources.membersOf([current.id], trx)
      const input = inputOf(row, members)
      // The members the resource names (none when it names none: a PUT or a PATCH's result replaces them all).
      const after = new Set((input.members ?? []).map((member) => canonicalUuid(member.value ?? '')))
      const users = await scimResources.usersAmong(directory.id, [...after].filter((id) => isUuid(id)), trx)
      const known = new Set(users.map((user) => user.id))
      const unknown = [...after].filter((id) => !known.has(id))
      if (unknown.length > 0) {
        throw validationFailed([{ path: '/members', message: `not users of this directory: ${unknown.slice(0, 5).join(', ')}` }])
      }
      const before = new Set(members.map((member) => member.scim_user_id))
      const changes = {
        display_name: input.displayName, external_id: input.externalId ?? null, updated_at: this.#timestamp()
      }
      const next: ScimGroupsTable = { ...row, ...changes }
      const added = [...after].filter((id) => !before.has(id))
      const removed = [...before].filter((id) => !after.has(id))
      const renamed = current !== null && current.display_name !== next.display_name
      if (current === null) await scimResources.insertGroup(next, trx)
      else await scimResources.updateGroup(directory.id, next.id, changes, trx)
      await scimResources.addMembers(next.id, added, trx)
      await scimResources.removeMembers(next.id, removed, trx)
      const affected = renamed ? [...new Set([...before, ...after])] : [...added, ...removed]
      const memberships = await this.deps.memberships.rejoin(directory, affected, trx)
      const entry = this.#groupEntry(event, directory, next, { added: added.length, removed: removed.length })
      return { ...memberships, next, entries: [entry, ...memberships.entries] }
    }, (result) => result.entries)
    await outcome.revokeAccess()
    return groupView(outcome.next, await scimResources.membersOf([outcome.next.id]), this.#base(directory))
  }

  async #group (directory: DirectoryStanding, id: string): Promise<ScimGroupsTable> {
    const row = await this.deps.scimResources.findGroup(directory.id, resourceId(id, 'Group'))
    if (row === undefined) throw new Errors.NOT_FOUND('Group')
    return row
  }

  #groupEntry (
    event: 'scim.group_created' | 'scim.group_updated' | 'scim.group_deleted', directory: DirectoryStanding, group: ScimGroupsTable,
    members: { added: number, removed: number } = { added: 0, removed: 0 }
  ): AuditChange {
    return {
      event,
      outcome: 'success',
      details: {
        organization_id: directory.organizationId,
        directory_id: directory.id,
        group_id: group.id,
        display_name: group.display_name,
        members_added: members.added,
        members_removed: members.removed
      }
    }
  }
}
