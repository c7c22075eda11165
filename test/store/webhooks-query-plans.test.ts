import { sql } from 'kysely'
import t from 'tap'
import type { CollectionRequest } from '../../src/collection/query.js'
import { PURGE_BATCH } from '../../src/services/retention.js'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, page, planChecker, rolledBack, sortsNothing } from '../helpers/query-plans.js'

/**
 * The webhook deliveries the sender claims, the API pages and the maintenance removes are found
 * through an index on both databases: webhook_deliveries gains a row per event and endpoint, so
 * no query may read it whole (docs/api.md, "Webhooks").
 */

const { checkPlans } = planChecker(['webhook_deliveries'])

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const id = (kind: number, index: number) => `00000000-0000-7000-800${kind}-${String(index).padStart(12, '0')}`
const USER = id(0, 0)
const ENDPOINTS = [id(1, 0), id(1, 1), id(1, 2)] as const
const delivery = (index: number) => id(2, index)
const DELIVERIES = 4000
/** After the last delivery was made and most pending ones came due. */
const NOW = at(DELIVERIES + 100)

/**
 * One user's 3 endpoints and 4,000 deliveries, made one second apart and dealt to the endpoints
 * in turn. All but 100 are settled (40 of them failed); of the pending ones every other is due,
 * and a fifth of those is held by another instance; the rest wait for a later try. Enough
 * rows that PostgreSQL's statistics tell its indexes apart.
 */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'users', [
    { id: USER, email: 'owner@example.com', name: 'Owner', email_verified: 1, created_at: at(0), updated_at: at(0) }
  ])
  await insertChunked(db, 'webhook_endpoints', ENDPOINTS.map((endpoint, index) => ({
    id: endpoint,
    url: `https://hooks.example.com/${index}`,
    description: `Endpoint ${index}`,
    event_types: '["membership.added"]',
    secret: 'sealed-secret',
    created_by: USER,
    created_at: at(0),
    updated_at: at(0)
  })))
  await insertChunked(db, 'webhook_deliveries', Array.from({ length: DELIVERIES }, (_, index) => {
    const pending = index % 40 === 7
    const wave = Math.floor(index / 40)
    const due = wave % 2 === 0
    const failed = index % 100 === 50
    return {
      id: delivery(index),
      endpoint_id: ENDPOINTS[index % ENDPOINTS.length],
      event_type: 'membership.added',
      payload: `{"n":${index}}`,
      status: pending ? 'pending' : failed ? 'failed' : 'succeeded',
      attempts: pending ? 1 : failed ? 8 : 1,
      next_attempt_at: !pending ? null : due ? at(index + 60) : at(DELIVERIES + 3600 + index),
      claimed_until: pending && due && wave % 10 === 0 ? at(DELIVERIES + 130) : null,
      last_status: pending || failed ? 500 : 204,
      last_error: null,
      created_at: at(index),
      updated_at: at(index)
    }
  }))
  if (dialect === 'postgres') {
    for (const table of ['users', 'webhook_endpoints', 'webhook_deliveries']) {
      await sql`analyze ${sql.table(table)}`.execute(db)
    }
  }
}

for (const backend of backends()) {
  t.test(`webhook query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { webhooks } = recorded.repositories
    const { dialect } = database
    await seed(database)
    const byEndpoint = /webhook_deliveries_endpoint_id_created_at_id/

    t.test('the sender claims the due deliveries through the partial index of those waiting', async (t) => {
      const claimed = await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
        const deliveries = await webhooks.claimDue(NOW, at(DELIVERIES + 160), 10)
        t.equal(deliveries.length, 10, 'a full batch')
        // claimDue takes no transaction: its claims are released, so later checks see the seed.
        await database.db.updateTable('webhook_deliveries').set({ claimed_until: null })
          .where('id', 'in', deliveries.map((claim) => claim.id)).execute()
      }, /webhook_deliveries_due/)
      t.match(claimed.map(({ plan }) => plan).join('\n'),
        dialect === 'sqlite' ? /SEARCH webhook_deliveries USING (COVERING )?INDEX webhook_deliveries_due \(next_attempt_at[<>]/ : /Index Cond: \(next_attempt_at <=/,
        'a range of the index, up to now')
    })

    t.test('the deliveries page of an endpoint, in making order, by offset and by cursor', async (t) => {
      const newestFirst = [{ field: 'created_at', descending: true }, { field: 'id', descending: true }]
      const later = (limit: number) => ({ kind: 'cursor' as const, limit, after: [at(999), delivery(999)] })
      const variants: Array<[string, Partial<CollectionRequest>]> = [
        ['offset, oldest first', {}],
        ['offset, newest first', { sort: newestFirst }],
        ['cursor, first page', { pagination: { kind: 'cursor', limit: 20, after: null } }],
        ['cursor, later page', { pagination: later(20) }],
        ['cursor, newest first', { sort: newestFirst, pagination: later(20) }]
      ]
      // Before the subtests, whose recorded queries it would otherwise join.
      const next = await webhooks.listDeliveries(ENDPOINTS[0], page({ pagination: later(2) }))
      t.same(next.items.map((item) => item.id), [delivery(1002), delivery(1005)], 'the cursor page goes on after its row')
      for (const [variant, overrides] of variants) {
        t.test(variant, async (t) => {
          const plans = await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
            const result = await webhooks.listDeliveries(ENDPOINTS[0], page(overrides))
            t.equal(result.items.length, 20, 'a full page')
          }, byEndpoint)
          sortsNothing(t, plans, dialect)
        })
      }
    })

    t.test('a manual retry finds its delivery by the primary key', async (t) => {
      await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.match(await webhooks.retryDelivery(ENDPOINTS[0], delivery(3), NOW, trx), { status: 'pending', next_attempt_at: NOW }, 'due now')
        })
      }, dialect === 'sqlite' ? /SEARCH webhook_deliveries USING INDEX sqlite_autoindex_webhook_deliveries_1 \(id=\?\)/ : /webhook_deliveries_pkey/)
    })

    t.test('disabling and enabling an endpoint pause and resume its pending deliveries, found by endpoint', async (t) => {
      for (const enabled of [false, true]) {
        await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
          await rolledBack(recorded.db, async (trx) => {
            t.match(await webhooks.update(ENDPOINTS[1], { enabled }, NOW, trx), { enabled }, enabled ? 'enabled' : 'disabled')
          })
        }, byEndpoint)
      }
    })

    t.test('an endpoint disabled for failing has its pending deliveries paused, found by endpoint', async (t) => {
      await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.equal(await webhooks.disableFailing(ENDPOINTS[2], at(DELIVERIES), NOW, trx), true, 'disabled (then rolled back)')
        })
      }, byEndpoint)
    })

    // Last: purgeSettled takes no transaction, and the deliveries it removes stay removed. The
    // batch is the service's: at this table's size, a larger one is cheaper deleted by reading the table whole.
    t.test('the purge reads the oldest settled deliveries in making order', async (t) => {
      await checkPlans(t, database, recorded, 'webhook_deliveries', async () => {
        t.equal(await webhooks.purgeSettled(at(2000), PURGE_BATCH), PURGE_BATCH, 'a full batch')
      }, /webhook_deliveries_settled_created_at\b/)
    })
  })
}
