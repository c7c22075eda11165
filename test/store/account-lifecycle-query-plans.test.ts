import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The lifecycle's reads and writes on large tables find their rows through an index on both
 * databases: erasing an account (docs/api.md, "Deleting one's account") touches its audit
 * entries and the invitations to its address, the erasure job looks for the accounts due, and
 * ending a user's sessions finds their impersonations' tokens.
 */

const WATCHED = ['users', 'audit_logs', 'organization_invitations', 'impersonations'] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const email = (index: number) => `user-${index}@example.com`
const USERS = 2000

/** 2,000 users (20 due for erasure), three audit entries each, an invitation and an impersonation each. */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', Array.from({ length: USERS }, (_, index) => ({
    id: userId(index),
    email: email(index),
    name: `User ${index}`,
    email_verified: 1,
    created_at: at(0),
    updated_at: at(0),
    deletion_due_at: index % 100 === 0 ? at(1000 + index) : null
  })))
  await insertChunked(db, 'audit_logs', Array.from({ length: USERS * 3 }, (_, index) => ({
    id: id(1, index),
    event: 'user.created',
    actor_id: userId(index % USERS),
    target_id: userId((index + 7) % USERS),
    ip: '203.0.113.7',
    user_agent: 'Browser',
    outcome: 'success',
    details: JSON.stringify({ email: email(index % USERS) }),
    created_at: at(index)
  })))
  await insertChunked(db, 'organizations', [{ id: id(2, 0), name: 'Organization', slug: 'organization', created_at: at(0), updated_at: at(0) }])
  await insertChunked(db, 'organization_invitations', Array.from({ length: USERS }, (_, index) => ({
    id: id(3, index), organization_id: id(2, 0), email: email(index), role: 'member', token_hash: `hash-${index}`, invited_by: null, created_at: at(index), expires_at: at(index + 86400)
  })))
  await insertChunked(db, 'impersonations', Array.from({ length: USERS }, (_, index) => ({
    id: id(4, index), user_id: userId(index), impersonator_id: userId((index + 1) % USERS), reason: 'Support', access_jti: `jti-${index}`, created_at: at(index), expires_at: at(index + 900)
  })))
  if (dialect === 'postgres') {
    for (const table of WATCHED) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`account lifecycle query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { accountErasure, impersonations, users } = recorded.repositories
    await seed(database)

    t.test('the accounts due for erasure, through the partial index of those scheduled', async (t) => {
      await checkPlans(t, database, recorded, 'users', async () => {
        const due = await accountErasure.due(at(1000 + 500), 100)
        t.same(due.map((user) => user.id), [0, 100, 200, 300, 400, 500].map(userId), 'those due by then, earliest first')
      }, /users_deletion_due_at/)
    })

    t.test('erasing an account reads its audit entries as actor and as target through their indexes, and the invitations to its address', async (t) => {
      const erased = { id: userId(42), email: email(42) }
      await checkPlans(t, database, recorded, 'audit_logs', async () => {
        await accountErasure.eraseTraces(erased)
        await users.delete(erased.id)
      }, /audit_logs_target_id_created_at/)
      const { db } = database
      const entries = await db.selectFrom('audit_logs').selectAll()
        .where((eb) => eb.or([eb('actor_id', '=', erased.id), eb('target_id', '=', erased.id)])).execute()
      t.equal(entries.length, 6, 'its entries are kept')
      t.ok(entries.every((entry) => entry.ip === null && entry.user_agent === null && !entry.details.includes(erased.email)), 'without its personal data')
      const others = await db.selectFrom('audit_logs').select('ip').where('actor_id', '=', userId(43)).execute()
      t.ok(others.every((entry) => entry.ip !== null), 'the others\' entries are untouched')
      await checkPlans(t, database, recorded, 'organization_invitations', async () => {
        await accountErasure.eraseTraces({ id: userId(43), email: email(43) })
      }, /organization_invitations_email/)
    })

    t.test('the tokens of a user\'s impersonations, through the user\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'impersonations', async () => {
        t.same(await impersonations.accessTokens(userId(9), at(0)), [{ jti: 'jti-9', issuedAt: at(9) }])
      }, /impersonations_user_id_expires_at/)
    })
  })
}
