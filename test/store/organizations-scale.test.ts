import { type CompiledQuery, sql } from 'kysely'
import t from 'tap'
import { type CollectionRequest, COUNT_LIMITS } from '../../src/collection/query.js'
import type { Database } from '../../src/store/database.js'
import { backends, queryPlan } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'

/**
 * One organization of 20,000 members beside one of 500 (members of both, counted exactly below
 * the count limit): its members page and the membership check stay on their indexes, the page
 * in the index's order, and a cursor walks every member once, in joining order. Inserted by the
 * database itself (a few seconds on SQLite).
 */
const MEMBERS = 20_000
const OTHERS = 500
const BIG = '00000000-0000-7000-8001-000000000000'
const OTHER = '00000000-0000-7000-8001-000000000001'

/** The users and both organizations' memberships, generated in the database in one transaction. */
async function seed ({ db, dialect }: Database) {
  const postgres = dialect === 'postgres'
  const userId = postgres ? "'00000000-0000-7000-8000-' || lpad(i::text, 12, '0')" : "'00000000-0000-7000-8000-' || printf('%012d', i)"
  // Joined one second apart from 2025-01-01, in each dialect's timestamp form.
  const joined = postgres
    ? "timestamptz '2025-01-01T00:00:00Z' + i * interval '1 second'"
    : "strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i, 'unixepoch')"
  const sequence = `with recursive seq(i) as (select 0 union all select i + 1 from seq where i < ${MEMBERS - 1})`
  await db.transaction().execute(async (trx) => {
    if (postgres) await sql`set local statement_timeout = 0`.execute(trx)
    await sql.raw(`${sequence} insert into users (id, email, name, email_verified, created_at, updated_at)
      select ${userId}, 'member' || i || '@example.com', 'Member ' || i, 1, ${joined}, ${joined} from seq`).execute(trx)
    const now = new Date(Date.UTC(2025, 0, 1)).toISOString()
    await trx.insertInto('organizations').values([
      { id: BIG, name: 'Big', slug: 'big', created_at: now, updated_at: now },
      { id: OTHER, name: 'Other', slug: 'other', created_at: now, updated_at: now }
    ]).execute()
    await sql.raw(`${sequence} insert into organization_members (organization_id, user_id, role, created_at)
      select '${BIG}', ${userId}, case when i = 0 then 'owner' else 'member' end, ${joined} from seq`).execute(trx)
    await sql.raw(`${sequence} insert into organization_members (organization_id, user_id, role, created_at)
      select '${OTHER}', ${userId}, 'admin', ${joined} from seq where i % 40 = 0`).execute(trx)
    if (postgres) for (const table of ['users', 'organization_members']) await sql`analyze ${sql.table(table)}`.execute(trx)
  })
}

const oldestFirst = [{ field: 'created_at', descending: false }, { field: 'id', descending: false }]
const page = (overrides: Partial<CollectionRequest> = {}): CollectionRequest =>
  ({ scope: 'test', sort: oldestFirst, fields: null, filters: {}, pagination: { kind: 'offset', page: 1, limit: 50 }, ...overrides })

for (const backend of backends()) {
  t.test(`an organization of ${MEMBERS} members (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    // Every query the repository ran: compiled reads (the pages) and statements run through Kysely.
    const { repositories: { organizations }, ran } = recordingRepositories(database)
    const started = Date.now()
    await seed(database)
    t.comment(`seeded in ${Date.now() - started} ms`)
    const sqlite = database.dialect === 'sqlite'
    const planOf = async (query: CompiledQuery<unknown>) => await queryPlan(database, 'organization_members', { compile: () => query })

    t.test('the members page reads the organization\'s index in its order, sorting nothing', async (t) => {
      for (const sort of [oldestFirst, oldestFirst.map((key) => ({ ...key, descending: true }))]) {
        ran.length = 0
        const first = await organizations.listMembers(BIG, page({ sort }))
        t.equal(first.items.length, 50)
        t.match(first, { kind: 'offset', total: COUNT_LIMITS.default, totalExact: false }, 'the count stops at its limit')
        const query = ran.find((compiled) => compiled.sql.includes('order by'))
        if (query === undefined) throw new Error('no page query ran')
        const plan = await planOf(query)
        t.match(plan, /organization_members_organization_id_created_at_user_id/, plan)
        t.notMatch(plan, sqlite ? /^\W*SCAN m\b|TEMP B-TREE/m : /Seq Scan on organization_members|\bSort\b/, plan)
      }
    })

    t.test('the other organization counts its own members only', async (t) => {
      t.match(await organizations.listMembers(OTHER, page()), { kind: 'offset', total: OTHERS, totalExact: true })
    })

    t.test('a cursor walks every member once, in joining order', async (t) => {
      const seen: string[] = []
      let after: unknown[] | null = null
      for (;;) {
        const result = await organizations.listMembers(BIG, page({ pagination: { kind: 'cursor', limit: 500, after } }))
        seen.push(...result.items.map((member) => member.id))
        const last = result.items.at(-1)
        if (result.kind !== 'cursor' || !result.hasMore || last === undefined) break
        after = [last.created_at, last.id]
      }
      t.equal(seen.length, MEMBERS, 'every member')
      t.equal(new Set(seen).size, MEMBERS, 'each once')
      t.equal(seen[0], '00000000-0000-7000-8000-000000000000', 'the first to join first')
      t.equal(seen.at(-1), `00000000-0000-7000-8000-${String(MEMBERS - 1).padStart(12, '0')}`, 'the last to join last')
      t.ok(seen.every((id, index) => index === 0 || (seen[index - 1] ?? '') < id), 'in joining order')
    })

    t.test('a rare member search reads its matches through a trigram index, a common one the first members in order', async (t) => {
      ran.length = 0
      const rare = await organizations.listMembers(BIG, page({ search: 'MEMBER 1999' }))
      t.same(rare.items.map((member) => member.name), ['Member 1999', ...Array.from({ length: 10 }, (_, index) => `Member 1999${index}`)],
        'in joining order')
      t.match(rare, { kind: 'offset', total: 11, totalExact: true })
      const byAddress = await organizations.listMembers(BIG, page({ search: 'member12345@' }))
      t.same(byAddress.items.map((member) => member.email), ['member12345@example.com'], 'addresses are searched too')
      for (const query of ran) {
        const plan = await planOf(query)
        t.match(plan, sqlite ? /users_member_search/ : /(users_name_trigram|users_email_trigram)/, plan)
        // From the few matches to their memberships, never through every member of the organization.
        t.notMatch(plan, sqlite ? /^\W*SCAN (m|organization_members)\b|SEARCH m USING (COVERING )?INDEX \w+ \(organization_id=\?\)/m : /Seq Scan/, plan)
      }
      const common = await organizations.listMembers(BIG, page({ search: 'member 1' }))
      t.same(common.items.slice(0, 3).map((member) => member.name), ['Member 1', 'Member 10', 'Member 11'], 'in joining order')
      t.equal(common.items.length, 50)
      t.match(common, { kind: 'offset', totalExact: false })
    })

    t.test('the membership check is one lookup of the primary key', async (t) => {
      t.equal(await organizations.roleOf(OTHER, '00000000-0000-7000-8000-000000012345'), undefined, 'not in the other')
      ran.length = 0
      t.equal(await organizations.roleOf(BIG, '00000000-0000-7000-8000-000000012345'), 'member')
      t.equal(ran.length, 1, 'one query')
      const [check] = ran
      if (check === undefined) throw new Error('no query ran')
      const plan = await planOf(check)
      t.match(plan, sqlite
        ? /SEARCH organization_members USING (COVERING )?INDEX \w+ \(organization_id=\? AND user_id=\?\)/
        : /Index (Only )?Scan using organization_members_(pkey|user_id) on organization_members/, plan)
      t.notMatch(plan, sqlite ? /^\W*SCAN organization_members\b/m : /Seq Scan/, plan)
    })
  })
}
