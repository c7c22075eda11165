import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker, rolledBack } from '../helpers/query-plans.js'

/**
 * The reads of SCIM provisioning, as the repositories build them, from an index on both
 * databases: a directory's users grow with its organization, and an identity provider looks
 * each person up by userName before it writes them (docs/api.md, "SCIM provisioning").
 */

const WATCHED = ['scim_directories', 'scim_users', 'scim_groups', 'scim_group_members'] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const scimUserId = (index: number) => id(3, index)
const groupId = (index: number) => id(4, index)
const BIG = { organization: id(1, 0), directory: id(2, 0) }
const SMALL = { organization: id(1, 1), directory: id(2, 1) }
const USERS = 4000
/** Groups of each directory. */
const GROUPS = 1000

/**
 * Two organizations with a directory each: 3,950 users in the big one, 50 in the small; 1,000
 * groups each, every user in two of its directory's groups; one user in ten deactivated.
 */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', Array.from({ length: USERS }, (_, index) => ({
    id: userId(index), email: `person-${index}@corp.example`, name: `Person ${index}`, email_verified: 1, created_at: at(0), updated_at: at(0)
  })))
  await insertChunked(db, 'organizations', [BIG, SMALL].map(({ organization }, index) =>
    ({ id: organization, name: `Organization ${index}`, slug: `organization-${index}`, created_at: at(0), updated_at: at(0) })))
  await insertChunked(db, 'scim_directories', [BIG, SMALL].map(({ organization, directory }, index) => ({
    id: directory,
    organization_id: organization,
    name: `Directory ${index}`,
    token_hash: `token-hash-${index}`,
    role_mapping: '{}',
    default_role: 'member',
    created_at: at(0),
    updated_at: at(0)
  })))
  const directoryOf = (index: number) => index < USERS - 50 ? BIG.directory : SMALL.directory
  await insertChunked(db, 'scim_users', Array.from({ length: USERS }, (_, index) => ({
    id: scimUserId(index),
    directory_id: directoryOf(index),
    user_id: userId(index),
    user_name: `person-${index}@corp.example`,
    external_id: `external-${index}`,
    active: index % 10 === 0 ? 0 : 1,
    resource: '{}',
    created_at: at(index),
    updated_at: at(index)
  })))
  await insertChunked(db, 'scim_groups', Array.from({ length: 2 * GROUPS }, (_, index) => ({
    id: groupId(index),
    directory_id: index < GROUPS ? BIG.directory : SMALL.directory,
    display_name: `Group ${index % GROUPS}`,
    external_id: `group-${index}`,
    created_at: at(index),
    updated_at: at(index)
  })))
  await insertChunked(db, 'scim_group_members', Array.from({ length: USERS }, (_, index) => {
    const base = directoryOf(index) === BIG.directory ? 0 : GROUPS
    return [
      { group_id: groupId(base + (index % GROUPS)), scim_user_id: scimUserId(index) },
      { group_id: groupId(base + ((index + 1) % GROUPS)), scim_user_id: scimUserId(index) }
    ]
  }).flat())
  if (dialect === 'postgres') {
    for (const table of ['users', 'organizations', ...WATCHED]) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`SCIM query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { scimDirectories, scimResources } = recorded.repositories
    const { dialect } = database
    await seed(database)

    t.test('a directory\'s token, and the lookup an identity provider makes before each write: userName eq', async (t) => {
      await checkPlans(t, database, recorded, 'scim_directories', async () => {
        t.match(await scimDirectories.findByTokenHash('token-hash-1'), { id: SMALL.directory })
      }, dialect === 'sqlite' ? /sqlite_autoindex_scim_directories_2/ : /scim_directories_token_hash_key/)
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        const page = await scimResources.listUsers(BIG.directory, [{ column: 'user_name', op: 'eq', value: 'Person-77@corp.example' }], 0, 100)
        t.same(page.rows.map((row) => row.id), [scimUserId(77)], 'compared ignoring case')
        t.equal(page.total, 1)
      }, /scim_users_directory_id_user_name/)
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        t.equal((await scimResources.userNamed(BIG.directory, 'person-78@corp.example'))?.id, scimUserId(78))
        t.equal(await scimResources.userNamed(SMALL.directory, 'person-78@corp.example'), undefined, 'another directory\'s')
      }, /scim_users_directory_id_user_name/)
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        const page = await scimResources.listUsers(BIG.directory, [{ column: 'external_id', op: 'eq', value: 'external-79' }], 0, 100)
        t.equal(page.total, 1)
      }, /scim_users_directory_id_external_id_id/)
    })

    t.test('pages of a directory\'s users, and who a directory deactivated', async (t) => {
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        const page = await scimResources.listUsers(SMALL.directory, [], 10, 20)
        t.equal(page.total, 50)
        const expected = Array.from({ length: 20 }, (_, index) => scimUserId(USERS - 50 + 10 + index))
        t.same(page.rows.map((row) => row.id), expected, 'the 11th to 30th, oldest first')
      }, /scim_users_directory_id_id/)
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        t.equal(await scimResources.deprovisioned(BIG.organization, userId(30)), true)
        t.equal(await scimResources.deprovisioned(BIG.organization, userId(31)), false)
        t.equal(await scimResources.deprovisioned(SMALL.organization, userId(30)), false, 'another organization\'s directory')
      }, /scim_users_user_id/)
    })

    t.test('the row a write of a User or a group holds until its commit', async (t) => {
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.equal((await scimResources.holdUser(BIG.directory, scimUserId(7), trx))?.id, scimUserId(7))
          t.equal(await scimResources.holdUser(SMALL.directory, scimUserId(7), trx), undefined, 'another directory\'s')
        })
      }, /scim_users_directory_id_id|sqlite_autoindex_scim_users_1|scim_users_pkey/)
      await checkPlans(t, database, recorded, 'scim_groups', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.equal((await scimResources.holdGroup(BIG.directory, groupId(7), trx))?.id, groupId(7))
        })
      }, /scim_groups_directory_id|sqlite_autoindex_scim_groups_1|scim_groups_pkey/)
    })

    t.test('a directory\'s groups by displayName (what Entra ID looks up)', async (t) => {
      await checkPlans(t, database, recorded, 'scim_groups', async () => {
        const page = await scimResources.listGroups(BIG.directory, [{ column: 'display_name', op: 'eq', value: 'Group 7' }], 0, 100)
        t.same(page.rows.map((row) => row.id), [groupId(7)])
      }, /scim_groups_directory_id_display_name_id/)
    })

    t.test('a user\'s groups and a group\'s members', async (t) => {
      await checkPlans(t, database, recorded, 'scim_group_members', async () => {
        t.same((await scimResources.groupNamesOf(scimUserId(5))).sort(), ['Group 5', 'Group 6'])
      }, /scim_group_members_scim_user_id/)
      await checkPlans(t, database, recorded, 'scim_group_members', async () => {
        const members = Array.from({ length: USERS - 50 }, (_, index) => index)
          .filter((index) => index % GROUPS === 3 || (index + 1) % GROUPS === 3)
        t.equal((await scimResources.membersOf([groupId(3)])).length, members.length)
      }, dialect === 'sqlite' ? /sqlite_autoindex_scim_group_members_1/ : /scim_group_members_pkey/)
      await checkPlans(t, database, recorded, 'scim_users', async () => {
        t.equal((await scimResources.usersAmong(SMALL.directory, [scimUserId(USERS - 1), scimUserId(0)])).length, 1)
      }, /scim_users_directory_id_id|sqlite_autoindex_scim_users_1|scim_users_pkey/)
    })
  })
}
