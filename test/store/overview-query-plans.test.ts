import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The operators' overview (docs/api.md, "Overview") counts on the largest tables: each count
 * reads a range of an index, and no further than its cap, on both databases.
 */

const WATCHED = ['audit_logs', 'lockouts', 'webhook_deliveries', 'outbox'] as const
const { checkPlans } = planChecker(WATCHED)

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const userId = (index: number) => id(0, index)
const ROWS = 4000
/** Half the rows were made before `NOW`'s last day began, half within it. */
const NOW = at(ROWS * 60)
const SINCE = at(ROWS * 30)
const ENDPOINT = id(1, 0)

/**
 * 4,000 rows a table, one a minute: audit entries (every tenth a sign-in, every twentieth a
 * refused one), lockouts (every tenth in force at `NOW`), waiting messages (every fourth due by
 * `NOW`) and deliveries (every fortieth waiting: half due, half retrying later).
 */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', Array.from({ length: ROWS }, (_, index) => ({
    id: userId(index), email: `user-${index}@example.com`, name: `User ${index}`, email_verified: 1, created_at: at(0), updated_at: at(0)
  })))
  await insertChunked(db, 'audit_logs', Array.from({ length: ROWS }, (_, index) => ({
    id: id(2, index),
    event: index % 10 === 0 ? 'auth.login' : index % 20 === 5 ? 'auth.login_failed' : 'user.updated',
    actor_id: userId(index),
    target_id: userId(index),
    ip: '203.0.113.7',
    user_agent: 'Browser',
    outcome: 'success',
    details: '{}',
    created_at: at(index * 60)
  })))
  await insertChunked(db, 'lockouts', Array.from({ length: ROWS }, (_, index) => ({
    id: id(3, index),
    user_id: userId(index),
    ip: null,
    created_at: at(index * 60),
    locked_until: index % 10 === 0 ? at(ROWS * 60 + 900) : at(index * 60 + 30)
  })))
  await insertChunked(db, 'outbox', Array.from({ length: ROWS }, (_, index) => ({
    id: id(4, index),
    channel: 'email',
    recipient: `user-${index}@example.com`,
    subject: 'Notice',
    text_body: 'Notice',
    html_body: null,
    created_at: at(0),
    attempts: 0,
    next_attempt_at: index % 4 === 0 ? at(index * 60) : at(ROWS * 120 + index),
    claimed_until: null,
    last_error: null
  })))
  await insertChunked(db, 'webhook_endpoints', [{
    id: ENDPOINT, url: 'https://hooks.example.com/', description: 'Endpoint', event_types: '["user.created"]', secret: 'sealed', created_by: null, created_at: at(0), updated_at: at(0)
  }])
  await insertChunked(db, 'webhook_deliveries', Array.from({ length: ROWS }, (_, index) => {
    const waiting = index % 40 === 0
    return {
      id: id(5, index),
      endpoint_id: ENDPOINT,
      event_type: 'user.created',
      payload: '{}',
      status: waiting ? 'pending' : 'succeeded',
      attempts: waiting && index % 80 === 40 ? 2 : 1,
      next_attempt_at: !waiting ? null : index % 80 === 0 ? at(index * 60) : at(ROWS * 60 + 600),
      claimed_until: null,
      last_status: 204,
      last_error: null,
      created_at: at(index * 60),
      updated_at: at(index * 60)
    }
  }))
  if (dialect === 'postgres') {
    for (const table of [...WATCHED, 'users', 'webhook_endpoints']) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`overview query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { auditLogs, signInFailures, outbox, webhooks } = recorded.repositories
    await seed(database)

    t.test('the last day\'s entries of an event, through the (event, created_at) index, up to the cap', async (t) => {
      await checkPlans(t, database, recorded, 'audit_logs', async () => {
        t.equal(await auditLogs.countSince('auth.login', SINCE, 10_000), 200, 'the sign-ins of the last day')
        t.equal(await auditLogs.countSince('auth.login_failed', SINCE, 10_000), 100)
        t.equal(await auditLogs.countSince('auth.login', SINCE, 50), 50, 'no further than the cap')
      }, /audit_logs_event_created_at/)
    })

    t.test('the accounts locked now, through the lockouts\' end', async (t) => {
      await checkPlans(t, database, recorded, 'lockouts', async () => {
        t.equal(await signInFailures.countLockedAccounts(NOW, 10_000), 400)
        t.equal(await signInFailures.countLockedAccounts(NOW, 7), 7)
      }, /lockouts_locked_until_user_id/)
    })

    t.test('the outbox\'s overdue messages, through their due time', async (t) => {
      await checkPlans(t, database, recorded, 'outbox', async () => {
        t.same(await outbox.overdue(NOW, 10_000), { count: 1000, dueSince: at(0) })
        t.same(await outbox.overdue(NOW, 10), { count: 10, dueSince: at(0) })
      }, /outbox_next_attempt_at/)
    })

    t.test('the deliveries overdue and retrying, through the index of the waiting ones', async (t) => {
      await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
        const health = await webhooks.health(NOW, 10_000)
        t.same(health, { overdue: 50, retries: 50, endpointsRetrying: 1, endpointsDisabled: 0 })
        t.match(await webhooks.health(NOW, 5), { overdue: 5, retries: 5 })
      }, /webhook_deliveries_due/)
    })
  })
}
