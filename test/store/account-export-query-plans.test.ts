import { sql } from 'kysely'
import t from 'tap'
import { EXPORT_LIMITS } from '../../schemas/account-export.js'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The reads of an account's export (docs/api.md, "Account export"), as the repositories build
 * them, find the account's rows through an index on both databases: sessions, posts, comments,
 * audit entries and memberships grow with every account's use, so no list of the export may
 * read one of those tables whole, however many rows the other accounts have. Each reads the
 * account's own rows only; where its limit takes most of them, PostgreSQL may rather sort those
 * than read them in the index's order, which costs in proportion to the account, not the table.
 */

const WATCHED = ['sessions', 'posts', 'comments', 'audit_logs', 'organization_members', 'user_identities', 'passkeys', 'trusted_devices'] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const USERS = 2000
/** The exporting account: more of every list than the export holds, among everyone else's rows. */
const EXPORTER = userId(7)
const organizationId = (index: number) => id(1, index)

/**
 * The owners of rows made one after another: `perUser` of every user's, and `mine` of the
 * exporter's spread evenly among them, so the exporter's rows are neither the newest nor the oldest.
 */
function owners (perUser: number, mine: number): string[] {
  const others = Array.from({ length: USERS * perUser }, (_, index) => ({ owner: userId(index % USERS), at: index }))
  const gap = others.length / mine
  const spread = Array.from({ length: mine }, (_, index) => ({ owner: EXPORTER, at: (index + 0.5) * gap }))
  return [...others, ...spread].sort((a, b) => a.at - b.at).map((row) => row.owner)
}

/**
 * 2,000 users, each with sessions, posts, comments, audit entries, a membership, an identity, a
 * passkey and a device; the exporter has beyond each limit: 1,100 sessions, 600 posts, 1,100
 * comments, 1,100 audit entries of their own (and some by others about them), and 40
 * memberships. Enough rows that PostgreSQL's statistics tell its indexes apart.
 */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', Array.from({ length: USERS }, (_, index) => ({
    id: userId(index), email: `user-${index}@example.com`, name: `User ${index}`, email_verified: 1, created_at: at(0), updated_at: at(0)
  })))
  await insertChunked(db, 'sessions', owners(2, 1100).map((owner, index) => ({
    id: id(2, index),
    user_id: owner,
    device: '{"name":"Laptop"}',
    created_at: at(index),
    last_used_at: at(index),
    revoked_at: index % 3 === 0 ? at(index + 10) : null,
    revoked_reason: index % 3 === 0 ? 'logout' : null
  })))
  const posts = owners(3, 600)
  await insertChunked(db, 'posts', posts.map((author, index) => ({
    id: id(3, index), author_id: author, title: `Post ${index}`, body: 'Body', status: index % 2 === 0 ? 'published' : 'draft', created_at: at(index), updated_at: at(index)
  })))
  await insertChunked(db, 'comments', owners(2, 1100).map((author, index) => ({
    id: id(4, index), post_id: id(3, index % posts.length), author_id: author, body: `Comment ${index}`, created_at: at(index)
  })))
  await insertChunked(db, 'audit_logs', owners(3, 1100).map((actor, index) => ({
    id: id(5, index),
    event: 'auth.login',
    actor_id: actor,
    // Every 50th of the others' entries is about the exporter: theirs, not the exporter's.
    target_id: actor !== EXPORTER && index % 50 === 0 ? EXPORTER : actor,
    ip: '203.0.113.7',
    user_agent: 'Browser',
    outcome: 'success',
    details: '{}',
    created_at: at(index)
  })))
  await insertChunked(db, 'organizations', Array.from({ length: 100 }, (_, index) => ({
    id: organizationId(index), name: `Organization ${index}`, slug: `organization-${index}`, created_at: at(index), updated_at: at(index)
  })))
  await insertChunked(db, 'organization_members', [
    ...Array.from({ length: USERS }, (_, index) =>
      ({ organization_id: organizationId(index % 100), user_id: userId(index), role: 'member', created_at: at(index) }))
      .filter((member) => member.user_id !== EXPORTER),
    ...Array.from({ length: 40 }, (_, index) => ({ organization_id: organizationId(index), user_id: EXPORTER, role: 'admin', created_at: at(5000 + index) }))
  ])
  await insertChunked(db, 'user_identities', Array.from({ length: USERS }, (_, index) => ({
    id: id(6, index), provider: 'github', subject: `subject-${index}`, user_id: userId(index), email: `user-${index}@example.com`, created_at: at(index)
  })))
  await insertChunked(db, 'passkeys', Array.from({ length: USERS }, (_, index) => ({
    id: id(7, index), user_id: userId(index), credential_id: `credential-${index}`, public_key: `key-${index}`, counter: 0, transports: 'internal', name: `Passkey ${index}`, created_at: at(index), last_used_at: null
  })))
  await insertChunked(db, 'trusted_devices', Array.from({ length: USERS }, (_, index) => ({
    id: id(8, index), user_id: userId(index), device_id: `device-${index}`, name: `Device ${index}`, created_at: at(index)
  })))
  if (dialect === 'postgres') {
    for (const table of ['users', 'organizations', ...WATCHED]) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`account export query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { sessions, posts, comments, auditLogs, organizations, identities, passkeys, devices } = recorded.repositories
    await seed(database)

    t.test('the sessions, ended ones too, newest first, backwards through the user\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'sessions', async () => {
        const latest = await sessions.latestOf(EXPORTER, EXPORT_LIMITS.sessions + 1)
        t.equal(latest.length, EXPORT_LIMITS.sessions + 1, 'one beyond the limit: the list was cut')
        t.ok(latest.every((session, index) => index === 0 || (latest[index - 1]?.created_at ?? '') >= session.created_at), 'newest first')
        t.ok(latest.some((session) => session.revoked_at !== null), 'ended ones included')
      }, /sessions_user_id_created_at\b/)
    })

    t.test('the posts, every status, newest first, backwards through the author\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'posts', async () => {
        const latest = await posts.latestByAuthor(EXPORTER, EXPORT_LIMITS.posts + 1)
        t.equal(latest.length, EXPORT_LIMITS.posts + 1)
        t.same(new Set(latest.map((post) => post.status)), new Set(['published', 'draft']), 'drafts too')
      }, /posts_author_id_created_at_id/)
    })

    t.test('the comments through the author\'s index: only the author\'s are read', async (t) => {
      await checkPlans(t, database, recorded, 'comments', async () => {
        const latest = await comments.latestByAuthor(EXPORTER, EXPORT_LIMITS.comments + 1)
        t.equal(latest.length, EXPORT_LIMITS.comments + 1)
        t.ok(latest.every((comment) => comment.author_id === EXPORTER))
      }, /comments_author_id/)
    })

    t.test('the audit entries the account made, newest first, through the actor\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'audit_logs', async () => {
        const latest = await auditLogs.latestOfActor(EXPORTER, EXPORT_LIMITS.audit_entries + 1)
        t.equal(latest.length, EXPORT_LIMITS.audit_entries + 1)
        t.ok(latest.every((entry) => entry.actor_id === EXPORTER), 'the entries the exporter made, not those about them')
        t.ok(latest.every((entry, index) => index === 0 || (latest[index - 1]?.created_at ?? '') > entry.created_at), 'newest first')
      }, /audit_logs_actor_id_created_at/)
    })

    t.test('the memberships through the user\'s index, each organization by its key', async (t) => {
      await checkPlans(t, database, recorded, 'organization_members', async () => {
        const memberships = await organizations.membershipsOf(EXPORTER, EXPORT_LIMITS.memberships + 1)
        t.equal(memberships.length, 40)
        t.match(memberships[0], { organization_id: organizationId(39), name: 'Organization 39', slug: 'organization-39', role: 'admin', joined_at: at(5039) })
      }, /organization_members_user_id/)
    })

    t.test('identities, passkeys and trusted devices through their user\'s index', async (t) => {
      await checkPlans(t, database, recorded, 'user_identities', async () => {
        t.match(await identities.linkedTo(EXPORTER, EXPORT_LIMITS.identities + 1), [{ provider: 'github', subject: 'subject-7' }])
      }, /user_identities_user_id/)
      await checkPlans(t, database, recorded, 'passkeys', async () => {
        t.match(await passkeys.latestOf(EXPORTER, EXPORT_LIMITS.passkeys + 1), [{ id: id(7, 7), name: 'Passkey 7' }])
      }, /passkeys_user_id_created_at_id/)
      await checkPlans(t, database, recorded, 'trusted_devices', async () => {
        t.match(await devices.latestOf(EXPORTER, EXPORT_LIMITS.devices + 1), [{ id: id(8, 7), device_id: 'device-7' }])
      }, /trusted_devices_user_id_created_at/)
    })
  })
}
