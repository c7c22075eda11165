import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * API keys (docs/api.md, "API keys"): a key is read by its id on the request path, its use
 * recorded by its id, and a person's or an organization's keys are listed, counted and deleted
 * through their owner's index, on both databases.
 */

const { checkPlans } = planChecker(['api_keys'])
const USERS = 1000
const ORGANIZATIONS = 200
const NOW = Date.UTC(2026, 0, 1, 12)
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString()
const userId = (index: number) => `0190${String(index).padStart(8, '0')}-0000-7000-8000-000000000001`
const organizationId = (index: number) => `0190${String(index).padStart(8, '0')}-0000-7000-8000-000000000002`
const keyId = (index: number) => `0190${String(index).padStart(8, '0')}-0000-7000-8000-000000000003`

async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', Array.from({ length: USERS }, (_, index) => ({
    id: userId(index), email: `user-${index}@example.com`, name: `User ${index}`, email_verified: 1, created_at: at(0), updated_at: at(0)
  })))
  await insertChunked(db, 'organizations', Array.from({ length: ORGANIZATIONS }, (_, index) => ({
    id: organizationId(index), name: `Organization ${index}`, slug: `organization-${index}`, created_at: at(0), updated_at: at(0)
  })))
  // Three keys for each person, then five for each organization.
  const people = Array.from({ length: USERS * 3 }, (_, index) =>
    ({ user_id: userId(index % USERS), organization_id: null, role: null }))
  const organizations = Array.from({ length: ORGANIZATIONS * 5 }, (_, index) =>
    ({ user_id: null, organization_id: organizationId(index % ORGANIZATIONS), role: 'member' as const }))
  await insertChunked(db, 'api_keys', [...people, ...organizations].map((owner, index) => ({
    id: keyId(index),
    ...owner,
    name: `Key ${index}`,
    key_hash: `hash-${index}`,
    scopes: '["read"]',
    created_by: userId(index % USERS),
    created_at: at(index),
    expires_at: null,
    last_used_at: index % 2 === 0 ? null : at(index)
  })))
  if (dialect === 'postgres') await sql`analyze api_keys`.execute(db)
}

for (const backend of backends()) {
  t.test(`API key query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { apiKeys } = recorded.repositories
    await seed(database)
    const primaryKey = database.dialect === 'sqlite' ? /sqlite_autoindex_api_keys/ : /api_keys_pkey/

    t.test('a key is read by its id, and its use recorded by its id', async (t) => {
      await checkPlans(t, database, recorded, 'api_keys', async () => {
        const key = await apiKeys.cachedKey(keyId(7))
        t.equal(key?.name, 'Key 7')
        if (key !== undefined) await apiKeys.touch(key, NOW)
      }, primaryKey)
    })

    t.test('a person\'s keys are listed, counted at creation and deleted through their index', async (t) => {
      await checkPlans(t, database, recorded, 'api_keys', async () => {
        t.equal((await apiKeys.listOf({ userId: userId(5) })).length, 3)
        const made = await apiKeys.create({
          id: keyId(99_999), userId: userId(5), organizationId: null, role: null, name: 'New', keyHash: 'new', scopes: ['read'], createdBy: userId(5), createdAt: at(0), expiresAt: null
        }, 50)
        t.match(made, { id: keyId(99_999) })
        t.ok(await apiKeys.delete({ userId: userId(5) }, keyId(99_999)))
      }, /api_keys_user_id_created_at/)
    })

    t.test('an organization\'s keys likewise, through theirs', async (t) => {
      await checkPlans(t, database, recorded, 'api_keys', async () => {
        t.equal((await apiKeys.listOf({ organizationId: organizationId(3) })).length, 5)
        const made = await apiKeys.create({
          id: keyId(99_998), userId: null, organizationId: organizationId(3), role: 'admin', name: 'New', keyHash: 'new2', scopes: ['org:read'], createdBy: userId(1), createdAt: at(0), expiresAt: null
        }, 50)
        t.match(made, { id: keyId(99_998) })
        t.ok(await apiKeys.delete({ organizationId: organizationId(3) }, keyId(99_998)))
      }, /api_keys_organization_id_created_at/)
    })
  })
}
