import { sql } from 'kysely'
import t from 'tap'
import type { CollectionRequest } from '../../src/collection/query.js'
import type { Database } from '../../src/store/database.js'
import { backends, queryPlan } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, page, planChecker, rolledBack } from '../helpers/query-plans.js'

/**
 * The OAuth clients' page and what disabling or deleting one removes are found through an index
 * on both databases (docs/api.md, "OAuth clients"): authorization_artifacts gains rows with
 * every sign-in, so ending a client's may not read it whole; the clients' list pages through
 * oauth_clients_created_at_id, newest first by default.
 */

const { checkPlans } = planChecker(['authorization_artifacts'])

const at = (second: number) => new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString()
const CLIENTS = 2000
const ARTIFACTS = 6000
/** 22 base64url characters, as the service makes them; in the order they were made. */
const clientId = (index: number) => `client${String(index).padStart(16, '0')}`
const NOW = at(CLIENTS + 100)

/**
 * 2,000 clients made a second apart (every tenth disabled), and 6,000 artifacts: codes, tokens
 * and consents dealt to the first 300 clients (20 each, but every fifth none), and sessions for
 * no client. Enough rows that PostgreSQL's statistics tell its indexes apart.
 */
async function seed ({ db, dialect }: Database) {
  await insertChunked(db, 'oauth_clients', Array.from({ length: CLIENTS }, (_, index) => ({
    id: clientId(index),
    name: `Client ${index}`,
    secret_hash: index % 3 === 0 ? null : `hash-${index}`,
    redirect_uris: '["https://app.example.com/callback"]',
    post_logout_redirect_uris: '[]',
    grant_types: '["authorization_code"]',
    scopes: '["openid"]',
    disabled_at: index % 10 === 0 ? at(index + 1) : null,
    created_by: null,
    created_at: at(index),
    updated_at: at(index)
  })))
  const models = ['AuthorizationCode', 'AccessToken', 'RefreshToken', 'Grant', 'Session'] as const
  await insertChunked(db, 'authorization_artifacts', Array.from({ length: ARTIFACTS }, (_, index) => {
    const model = models[index % models.length] ?? 'Session'
    return {
      model,
      id: `artifact-${index}`,
      payload: '{}',
      grant_id: model === 'Grant' || model === 'Session' ? null : `artifact-${index - (index % models.length) + 3}`,
      user_code: null,
      uid: model === 'Session' ? `uid-${index}` : null,
      account_id: null,
      client_id: model === 'Session' ? null : clientId(index % 300),
      expires_at: at(CLIENTS + 3600 + index)
    }
  }))
  if (dialect === 'postgres') {
    for (const table of ['oauth_clients', 'authorization_artifacts']) await sql`analyze ${sql.table(table)}`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`OAuth client query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { oauthClients } = recorded.repositories
    const { dialect } = database
    await seed(database)

    t.test('the clients\' pages read oauth_clients_created_at_id, newest first by default, by offset and by cursor', async (t) => {
      // The service's default order (as `sort=-created_at`, its tie-breaker `-id`), and the
      // order the collections' own default would make (`id` ascending after `-created_at`).
      const newestFirst = [{ field: 'created_at', descending: true }, { field: 'id', descending: true }]
      const mixed = [{ field: 'created_at', descending: true }, { field: 'id', descending: false }]
      const later = (row: number) => ({ kind: 'cursor' as const, limit: 20, after: [at(row), clientId(row)] })
      const variants: Array<[string, Partial<CollectionRequest>, number]> = [
        ['offset, newest first (the default)', { sort: newestFirst }, CLIENTS - 1],
        ['cursor, first page, newest first', { sort: newestFirst, pagination: { kind: 'cursor', limit: 20, after: null } }, CLIENTS - 1],
        ['cursor, later page, newest first', { sort: newestFirst, pagination: later(1000) }, 999],
        ['offset, oldest first', {}, 0],
        ['cursor, later page, oldest first', { pagination: later(1000) }, 1001],
        ['created after, newest first', { sort: newestFirst, createdAfter: at(1500) }, CLIENTS - 1],
        ['offset, -created_at,id', { sort: mixed }, CLIENTS - 1]
      ]
      for (const [variant, overrides, first] of variants) {
        t.test(variant, async (t) => {
          recorded.ran.length = 0
          const result = await oauthClients.list(page(overrides))
          t.equal(result.items.length, 20, 'a full page')
          t.equal(result.items[0]?.id, clientId(first), 'in the asked order')
          t.notOk(JSON.stringify(result.items).includes('hash-'), 'no secret hash in the items')
          const queries = recorded.ran.filter((query) => query.sql.includes('"oauth_clients"'))
          t.ok(queries.length > 0, 'the page ran its queries')
          for (const query of queries) {
            const plan = await queryPlan(database, 'oauth_clients', { compile: () => query })
            const what = `${query.sql}\n${plan}`
            // An index scan bounded by the LIMIT (the page, or the count capped at 10,001) is no full read.
            if (dialect === 'sqlite') t.notMatch(plan, /^\W*SCAN oauth_clients$/m, `not read whole: ${what}`)
            else t.notMatch(plan, /Seq Scan/, `not read whole: ${what}`)
            if (!query.sql.includes('order by')) continue
            t.match(plan, /oauth_clients_created_at_id/, `through the index: ${what}`)
            if (overrides.sort === mixed) {
              // Only ties of created_at are sorted, by id; the whole is not.
              t.notMatch(plan, dialect === 'sqlite' ? /USE TEMP B-TREE FOR ORDER BY/ : /(?:^|->)\s*Sort\s+\(/m, `no sort of the whole: ${what}`)
            } else {
              t.notMatch(plan, dialect === 'sqlite' ? /USE TEMP B-TREE/ : /\bSort\b/, `in the index's order: ${what}`)
            }
            if (overrides.pagination?.kind === 'cursor' && overrides.pagination.after !== null) {
              t.match(plan, dialect === 'sqlite' ? /SEARCH oauth_clients USING INDEX oauth_clients_created_at_id \(\(created_at,id\)[<>]/ : /Index Cond: \(ROW\(created_at, id\) [<>]/,
                `a later page starts at its cursor in the index: ${what}`)
            }
          }
        })
      }
    })

    t.test('disabling a client removes its artifacts through authorization_artifacts_client_id', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        await rolledBack(recorded.db, async (trx) => {
          const updated = await oauthClients.update(clientId(7), { disabled: true }, NOW, trx)
          t.match(updated, { client: { id: clientId(7), disabled: true }, removed: 20 }, 'its 20 codes, tokens and consents')
        })
      }, /authorization_artifacts_client_id/)
    })

    t.test('deleting a client removes its artifacts through authorization_artifacts_client_id', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        await rolledBack(recorded.db, async (trx) => {
          t.same(await oauthClients.delete(clientId(8), trx), { removed: 20 })
          t.equal(await oauthClients.findById(clientId(8), trx), undefined)
        })
      }, /authorization_artifacts_client_id/)
      const left = await database.db.selectFrom('authorization_artifacts').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()
      t.equal(Number(left.count), ARTIFACTS, 'rolled back')
    })
  })
}
