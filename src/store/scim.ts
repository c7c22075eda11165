import { type RawBuilder, sql } from 'kysely'
import type { OrganizationRole } from '../../schemas/organizations.js'
import { isUniqueViolation, StoreConflict } from './errors.js'
import { uuidv7 } from './ids.js'
import { holdOrganizationRow } from './organizations.js'
import { containsPattern, matchesIgnoringCase, startsWithPattern } from './search.js'
import { atomically, type Db, type ScimDirectoriesTable, type ScimGroupsTable, type ScimUsersTable } from './types.js'

/** A directory as the services use it: its organization, and how its groups map to roles. */
export interface StoredScimDirectory {
  id: string
  organizationId: string
  name: string
  roleMapping: Record<string, OrganizationRole>
  defaultRole: OrganizationRole
  createdAt: string
  updatedAt: string
}

export type ScimDirectorySettings = Pick<StoredScimDirectory, 'name' | 'roleMapping' | 'defaultRole'>

/** One comparison of a SCIM filter on a column (src/services/scim/filter.ts); a list of them is their `and`. */
export interface ScimComparison {
  column: 'user_name' | 'external_id' | 'display_name' | 'id'
  op: 'eq' | 'co' | 'sw'
  value: string
}

export interface ScimPage<T> { total: number, rows: T[] }

/** A member of a group: the directory's user, by id and userName. */
export interface GroupMember { scim_user_id: string, user_name: string }

function directoryOf (row: ScimDirectoriesTable): StoredScimDirectory {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    roleMapping: JSON.parse(row.role_mapping) as Record<string, OrganizationRole>,
    defaultRole: row.default_role,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  }
}

function directoryColumns (settings: Partial<ScimDirectorySettings>): Partial<ScimDirectoriesTable> {
  return {
    ...(settings.name !== undefined && { name: settings.name }),
    ...(settings.roleMapping !== undefined && { role_mapping: JSON.stringify(settings.roleMapping) }),
    ...(settings.defaultRole !== undefined && { default_role: settings.defaultRole })
  }
}

/** Organizations' SCIM directories (docs/api.md, "SCIM provisioning"). */
export class ScimDirectoriesRepository {
  constructor (private readonly db: Db) {}

  /** Adds a directory unless the organization is gone or holds `max` (its row held while counting). */
  async create (
    organizationId: string,
    settings: ScimDirectorySettings,
    tokenHash: string,
    now: string,
    max: number,
    db: Db = this.db
  ): Promise<StoredScimDirectory | 'no_organization' | { max: number }> {
    return await atomically(db, async (trx) => {
      if (await holdOrganizationRow(trx, organizationId) === undefined) return 'no_organization'
      const held = await trx.selectFrom('scim_directories').select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('organization_id', '=', organizationId).executeTakeFirst()
      if (Number(held?.count ?? 0) >= max) return { max }
      const row = {
        id: uuidv7(),
        organization_id: organizationId,
        token_hash: tokenHash,
        ...directoryColumns(settings),
        created_at: now,
        updated_at: now
      } as ScimDirectoriesTable
      await trx.insertInto('scim_directories').values(row).execute()
      return directoryOf(row)
    })
  }

  /** The organization's directories, oldest first (scim_directories_organization_id). */
  async listOf (organizationId: string): Promise<StoredScimDirectory[]> {
    const rows = await this.db.selectFrom('scim_directories').selectAll().where('organization_id', '=', organizationId)
      .orderBy('created_at').orderBy('id').execute()
    return rows.map(directoryOf)
  }

  async find (directoryId: string, db: Db = this.db): Promise<StoredScimDirectory | undefined> {
    const row = await db.selectFrom('scim_directories').selectAll().where('id', '=', directoryId).executeTakeFirst()
    return row === undefined ? undefined : directoryOf(row)
  }

  /** The directory a bearer token's hash belongs to (its unique index). */
  async findByTokenHash (tokenHash: string): Promise<StoredScimDirectory | undefined> {
    const row = await this.db.selectFrom('scim_directories').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst()
    return row === undefined ? undefined : directoryOf(row)
  }

  /** Changes a directory's settings, or its token's hash: the directory as it now is, or undefined. */
  async update (
    organizationId: string, directoryId: string, changes: Partial<ScimDirectorySettings> & { tokenHash?: string },
    now: string, db: Db = this.db
  ): Promise<StoredScimDirectory | undefined> {
    return await atomically(db, async (trx) => {
      const token = changes.tokenHash === undefined ? {} : { token_hash: changes.tokenHash }
      await trx.updateTable('scim_directories').set({ ...directoryColumns(changes), ...token, updated_at: now })
        .where('organization_id', '=', organizationId).where('id', '=', directoryId).execute()
      const directory = await this.find(directoryId, trx)
      return directory?.organizationId === organizationId ? directory : undefined
    })
  }

  /** Removes a directory with its users and groups (not their accounts): the accounts it provisioned, or undefined. */
  async remove (organizationId: string, directoryId: string, db: Db = this.db): Promise<string[] | undefined> {
    return await atomically(db, async (trx) => {
      const directory = await this.find(directoryId, trx)
      if (directory?.organizationId !== organizationId) return undefined
      const accounts = await trx.selectFrom('scim_users').select('user_id').where('directory_id', '=', directoryId).execute()
      await trx.deleteFrom('scim_directories').where('id', '=', directoryId).execute()
      return accounts.map((row) => row.user_id)
    })
  }
}

function conflictOnUnique (error: unknown): never {
  throw isUniqueViolation(error) ? new StoreConflict('scim_user_exists') : error
}

/** A SCIM comparison as SQL on `column` of the table queried. */
function comparisonOf ({ column, op, value }: ScimComparison): RawBuilder<boolean> {
  switch (op) {
    // userName is kept in lower case (SCIM compares it ignoring case); the others as given (caseExact).
    case 'eq': return sql<boolean>`${sql.ref(column)} = ${column === 'user_name' ? value.toLowerCase() : value}`
    case 'sw': return matchesIgnoringCase(column, startsWithPattern(value))
    case 'co': return matchesIgnoringCase(column, containsPattern(value) ?? '')
  }
}

/** Users and groups of each directory, and their memberships. */
export class ScimResourcesRepository {
  constructor (private readonly db: Db) {}

  /** A page of a directory's users or groups matching every comparison, oldest first, and how many match. */
  async #page (
    table: 'scim_users' | 'scim_groups', directoryId: string, comparisons: ScimComparison[], offset: number, limit: number
  ): Promise<ScimPage<unknown>> {
    let query = this.db.selectFrom(table).where('directory_id', '=', directoryId)
    for (const comparison of comparisons) query = query.where(comparisonOf(comparison))
    const [counted, rows] = await Promise.all([
      query.select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirst(),
      limit === 0 ? [] : query.selectAll().orderBy('id').offset(offset).limit(limit).execute()
    ])
    return { total: Number(counted?.count ?? 0), rows }
  }

  async findUser (directoryId: string, id: string, db: Db = this.db): Promise<ScimUsersTable | undefined> {
    return await db.selectFrom('scim_users').selectAll().where('directory_id', '=', directoryId).where('id', '=', id).executeTakeFirst()
  }

  /**
   * A page of the directory's users matching every comparison, oldest first, and how many match
   * (userName eq: scim_users_directory_id_user_name; none: scim_users_directory_id_id).
   */
  async listUsers (
    directoryId: string, comparisons: ScimComparison[], offset: number, limit: number
  ): Promise<ScimPage<ScimUsersTable>> {
    return await this.#page('scim_users', directoryId, comparisons, offset, limit) as ScimPage<ScimUsersTable>
  }

  /** Holds a User's row for the rest of the transaction (a no-op update), and answers it as it now is. */
  async holdUser (directoryId: string, id: string, trx: Db): Promise<ScimUsersTable | undefined> {
    return await trx.updateTable('scim_users').set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('directory_id', '=', directoryId).where('id', '=', id).returningAll().executeTakeFirst()
  }

  /** The directory's user of a userName, in lower case (scim_users_directory_id_user_name). */
  async userNamed (directoryId: string, userName: string): Promise<ScimUsersTable | undefined> {
    return await this.db.selectFrom('scim_users').selectAll().where('directory_id', '=', directoryId).where('user_name', '=', userName)
      .executeTakeFirst()
  }

  /** A taken userName, or an account that is a user of the directory already, is StoreConflict 'scim_user_exists'. */
  async insertUser (row: ScimUsersTable, db: Db = this.db): Promise<void> {
    await db.insertInto('scim_users').values(row).execute().catch(conflictOnUnique)
  }

  async updateUser (
    directoryId: string, id: string, changes: Pick<ScimUsersTable, 'user_name' | 'external_id' | 'active' | 'resource' | 'updated_at'>, db: Db = this.db
  ): Promise<void> {
    await db.updateTable('scim_users').set(changes).where('directory_id', '=', directoryId).where('id', '=', id).execute()
      .catch(conflictOnUnique)
  }

  async removeUser (directoryId: string, id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('scim_users').where('directory_id', '=', directoryId).where('id', '=', id).execute()
  }

  /** The display names of the groups a user is in (scim_group_members_scim_user_id). */
  async groupNamesOf (scimUserId: string, db: Db = this.db): Promise<string[]> {
    const rows = await db.selectFrom('scim_group_members as m').innerJoin('scim_groups as g', 'g.id', 'm.group_id')
      .select('g.display_name').where('m.scim_user_id', '=', scimUserId).execute()
    return rows.map((row) => row.display_name)
  }

  /**
   * Whether a directory of the organization deactivated the account (scim_users_user_id): such a
   * person joins the organization through none of its doors until the directory says otherwise.
   */
  async deprovisioned (organizationId: string, userId: string, db: Db = this.db): Promise<boolean> {
    const row = await db.selectFrom('scim_users as u').innerJoin('scim_directories as d', 'd.id', 'u.directory_id')
      .select('u.id').where('u.user_id', '=', userId).where('d.organization_id', '=', organizationId).where('u.active', '=', 0)
      .executeTakeFirst()
    return row !== undefined
  }

  async findGroup (directoryId: string, id: string, db: Db = this.db): Promise<ScimGroupsTable | undefined> {
    return await db.selectFrom('scim_groups').selectAll().where('directory_id', '=', directoryId).where('id', '=', id).executeTakeFirst()
  }

  /** The group, its row held until `trx` ends: writes of one group apply one after another. */
  async holdGroup (directoryId: string, id: string, trx: Db): Promise<ScimGroupsTable | undefined> {
    return await trx.updateTable('scim_groups').set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('directory_id', '=', directoryId).where('id', '=', id).returningAll().executeTakeFirst()
  }

  async listGroups (
    directoryId: string, comparisons: ScimComparison[], offset: number, limit: number
  ): Promise<ScimPage<ScimGroupsTable>> {
    return await this.#page('scim_groups', directoryId, comparisons, offset, limit) as ScimPage<ScimGroupsTable>
  }

  async insertGroup (row: ScimGroupsTable, db: Db = this.db): Promise<void> {
    await db.insertInto('scim_groups').values(row).execute()
  }

  async updateGroup (
    directoryId: string, id: string, changes: Pick<ScimGroupsTable, 'display_name' | 'external_id' | 'updated_at'>, db: Db = this.db
  ): Promise<void> {
    await db.updateTable('scim_groups').set(changes).where('directory_id', '=', directoryId).where('id', '=', id).execute()
  }

  async removeGroup (directoryId: string, id: string, db: Db = this.db): Promise<void> {
    await db.deleteFrom('scim_groups').where('directory_id', '=', directoryId).where('id', '=', id).execute()
  }

  /** The members of groups, by group (primary key), with each member's account. */
  async membersOf (groupIds: string[], db: Db = this.db): Promise<Array<GroupMember & { group_id: string }>> {
    if (groupIds.length === 0) return []
    return await db.selectFrom('scim_group_members as m').innerJoin('scim_users as u', 'u.id', 'm.scim_user_id')
      .select(['m.group_id', 'm.scim_user_id', 'u.user_name']).where('m.group_id', 'in', groupIds).orderBy('u.id').execute()
  }

  /** Of `ids`, those that are users of the directory. */
  async usersAmong (directoryId: string, ids: string[], db: Db = this.db): Promise<ScimUsersTable[]> {
    if (ids.length === 0) return []
    return await db.selectFrom('scim_users').selectAll().where('directory_id', '=', directoryId).where('id', 'in', ids).execute()
  }

  async addMembers (groupId: string, scimUserIds: string[], db: Db): Promise<void> {
    if (scimUserIds.length === 0) return
    await db.insertInto('scim_group_members').values(scimUserIds.map((id) => ({ group_id: groupId, scim_user_id: id })))
      .onConflict((conflict) => conflict.doNothing()).execute()
  }

  async removeMembers (groupId: string, scimUserIds: string[], db: Db): Promise<void> {
    if (scimUserIds.length === 0) return
    await db.deleteFrom('scim_group_members').where('group_id', '=', groupId).where('scim_user_id', 'in', scimUserIds).execute()
  }
}
