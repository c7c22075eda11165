import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The lifecycle's reads and writes on large tables find their rows through an index on both
 * databases: erasing an account (docs/api.md, "Deleting one's account") touches its audit
 * entries and the invitations to its address, the erasure job looks for the accounts due,
 * ending a user's sessions finds their impersonations' tokens, ending an administrator's session
 * finds the impersonations begun from it, and an operator's look at an
 * account (docs/api.md, "Account support") reads its sessions, backup codes and identities.
 */

const WATCHED = ['users', 'audit_logs', 'organization_invitations', 'impersonations', 'sessions', 'mfa_backup_codes', 'user_identities'] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const email = (index: number) => `user-${index}@example.com`
const USERS = 2000

/**
 * 2,000 users (20 due for erasure), three audit entries each, an invitation, an impersonation,
 * three sessions (one ended), ten backup codes and an identity each.
 */
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
    id: id(4, index),
    user_id: userId(index),
    impersonator_id: userId((index + 1) % USERS),
    impersonator_session_id: id(5, index),
    reason: 'Support',
    access_jti: `jti-${index}`,
    created_at: at(index),
    expires_at: at(index + 900)
  })))
  await insertChunked(db, 'sessions', Array.from({ length: USERS * 3 }, (_, index) => ({
    id: id(5, index),
    user_id: userId(index % USERS),
    device: '{"name":"Laptop"}',
    created_at: at(index),
    last_used_at: at(index),
    revoked_at: index % 3 === 0 ? at(index + 10) : null,
    revoked_reason: index % 3 === 0 ? 'logout' : null
  })))
  await insertChunked(db, 'mfa_backup_codes', Array.from({ length: USERS * 10 }, (_, index) => ({
    id: id(6, index), user_id: userId(index % USERS), code_hash: `code-${index}`, created_at: at(0)
  })))
  await insertChunked(db, 'user_identities', Array.from({ length: USERS }, (_, index) => ({
    id: id(7, index), provider: 'github', subject: `subject-${index}`, user_id: userId(index), email: email(index), created_at: at(index)
  })))
  if (dialect === 'postgres') {
    for (const table of WATCHED) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`account lifecycle query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { accountErasure, impersonations, users, sessions, mfa, identities } = recorded.repositories
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

    t.test('ending a session finds the impersonations begun from it, through the session\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'impersonations', async () => {
        t.same(await sessions.revoke([id(5, 12)], 'logout', at(20), at(0)), [{ jti: 'jti-12', issuedAt: at(12) }])
      }, /impersonations_impersonator_session_id/)
    })

    t.test('an operator\'s look at an account: its live sessions, backup codes and identities through the user\'s indexes', async (t) => {
      const cutoffs = { idleBefore: at(0), createdBefore: at(0) }
      const request = {
        scope: 'sessions', sort: [{ field: 'last_used_at', descending: true }, { field: 'id', descending: false }], fields: null, filters: {}, pagination: { kind: 'cursor' as const, limit: 50, after: null }
      }
      await checkPlans(t, database, recorded, 'sessions', async () => {
        const live = await sessions.list(userId(11), cutoffs, request)
        t.same(live.items.map((session) => session.id).sort(), [id(5, 11), id(5, 2011)], 'its two live sessions, not the ended one')
      }, /sessions_user_id/)
      await checkPlans(t, database, recorded, 'mfa_backup_codes', async () => {
        t.equal((await mfa.backupCodes(userId(11))).length, 10)
      }, /mfa_backup_codes_user_id/)
      await checkPlans(t, database, recorded, 'user_identities', async () => {
        t.same((await identities.listFor(userId(11))).map((identity) => identity.provider), ['github'])
      }, /user_identities_user_id/)
    })
  })
}
