import type { FastifyInstance } from 'fastify'
import type { CompiledQuery } from 'kysely'
import t from 'tap'
import { CursorCodec } from '../../src/collection/cursor.js'
import { type CollectionRequest, COUNT_LIMITS, OFFSET_REACH, queryFingerprint } from '../../src/collection/query.js'
import { createRepositories } from '../../src/store/repositories.js'
import { createAccount } from '../helpers/accounts.js'
import { build, TEST_SECRET } from '../helpers/app.js'
import { backends, queryPlan } from '../helpers/database.js'

/**
 * Collection pages are compiled once per shape and later pages only bind values: a page
 * must never be answered with another request's values, and values that change the SQL
 * (a filter left out, or applied without a value) must not share a compiled query.
 */
const firstPage = (overrides: Partial<CollectionRequest> = {}): CollectionRequest => ({
  scope: 'test',
  sort: [{ field: 'id', descending: false }],
  fields: null,
  filters: {},
  pagination: { kind: 'offset', page: 1, limit: 50 },
  ...overrides
})

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const { posts, users } = app.repositories
    const alice = await createAccount(app, { name: 'Alice 100% real' })
    const bob = await createAccount(app, { name: 'Bob' })
    await posts.create(alice.id, { title: 'alice public', body: 'x', status: 'published' })
    await posts.create(alice.id, { title: 'alice draft', body: 'x', status: 'draft' })
    await posts.create(bob.id, { title: 'bob draft', body: 'x', status: 'draft' })
    const titles = async (viewerId: string | null, seesAll = false) => {
      const page = await posts.list(firstPage(), { viewerId, seesAll })
      return page.items.map((post) => post.title).sort()
    }

    t.test('one shape, each viewer with their own value', async (t) => {
      t.same(await titles(alice.id), ['alice draft', 'alice public'])
      t.same(await titles(bob.id), ['alice public', 'bob draft'], "bob's page binds bob, not alice")
      t.same(await titles(alice.id), ['alice draft', 'alice public'])
    })

    t.test('values that change the SQL are shapes of their own, in any order', async (t) => {
      t.same(await titles(null), ['alice public'], 'anonymous after a signed-in viewer: published only')
      t.same(await titles(bob.id, true), ['alice draft', 'alice public', 'bob draft'], 'a moderator sees all')
      t.same(await titles(null), ['alice public'], 'anonymous after a moderator: published only')
      t.same(await titles(alice.id), ['alice draft', 'alice public'])
    })

    t.test('searches of one shape bind their own pattern, wildcards taken literally', async (t) => {
      const names = async (search: string) => (await users.list(firstPage({ search }))).items.map((user) => user.name)
      t.same(await names('alice'), ['Alice 100% real'])
      t.same(await names('BOB'), ['Bob'])
      t.same(await names('100%'), ['Alice 100% real'])
      t.same(await names('%'), ['Alice 100% real'], '% is a character, not a wildcard')
      t.same(await names('_'), [])
    })

    t.test('indexed searches (3 characters or more) answer as the scan does', async (t) => {
      await createAccount(app, { name: 'Émile "Zola" Ünal' })
      // Every trigram of "abcde" without the phrase; repeated trigrams; wildcards and a backslash; a
      // capital whose lower case is two code points.
      for (const name of ['Abcd bcde', 'aaaa abcabc', '50%_off C:\\path', 'İstanbul Straße']) await createAccount(app, { name })
      const names = async (search: string) => (await users.list(firstPage({ search }))).items.map((user) => user.name)
      t.same(await names('zola" ü'), ['Émile "Zola" Ünal'], 'quotes are characters, not query syntax')
      t.same(await names('abcde'), [], 'the trigrams of the text in another order are no match')
      for (const search of ['ÉMILE', 'émile', 'mile', '"zola"', 'zola" ü', 'ÜNAL', 'é', 'ü', '00%', 'OB', 'abcde', 'bcd', 'aaa', 'cab', '%_o', ':\\pa', 'STRASSE', 'aße', 'd b',
        // PostgreSQL's lower() folds İ to i; SQLite's, as replaced (database.ts), to i and a combining dot, as the
        // pattern is.
        ...(backend.url === null ? ['İST', 'i̇st', 'ist'] : [])]) {
        const all = (await users.list(firstPage())).items.map((user) => user.name)
        t.same(await names(search), all.filter((name) => name.toLowerCase().includes(search.toLowerCase())), search)
      }
    })

    t.test('offset pages and cursors of one shape bind their own bounds', async (t) => {
      const ids = (await users.list(firstPage())).items.map((user) => user.id)
      const pageOf = async (page: number) => (await users.list(firstPage({ pagination: { kind: 'offset', page, limit: 1 } }))).items.map((user) => user.id)
      t.same([...await pageOf(2), ...await pageOf(1)], [ids[1], ids[0]])
      const after = async (id: string | undefined) => (await users.list(firstPage({ pagination: { kind: 'cursor', limit: 1, after: [id] } }))).items.map((user) => user.id)
      t.same(await after(ids[0]), [ids[1]])
      t.same(await after(ids[1]), ids.slice(2, 3))
    })
  })
}

/** Repositories over the app's database that keep every query a page ran, with its values. */
function recordingRepositories (app: FastifyInstance) {
  const ran: Array<CompiledQuery<unknown>> = []
  const read = app.database.readRows
  const repositories = createRepositories({
    ...app.database,
    // Synchronous on SQLite, as the service's reads are.
    readRows: <Row>(query: CompiledQuery<Row>) => {
      ran.push(query)
      return read(query)
    }
  }, { cursors: new CursorCodec(TEST_SECRET), countLimit: app.config.collectionCountLimit })
  return { repositories, ran }
}

/** A table read whole (SCAN capped is the capped count's own subquery). */
const FULL_SCAN_SQLITE = /^SCAN (users|posts|comments|sessions|trusted_devices|audit_logs|passkeys)$/m

/**
 * Every collection, with each of its filters, as the services call them: each query a page
 * runs (the page, the count) is read from an index on both databases, never by a full scan
 * (docs/api.md, "Collections"). Searches of 3 characters or more use the trigram indexes.
 */
for (const backend of backends()) {
  t.test(`${backend.name}: query plans`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const { repositories, ran } = recordingRepositories(app)
    const author = await createAccount(app, { name: 'Émile Author' })
    const post = await repositories.posts.create(author.id, { title: 'A title', body: 'Some body', status: 'published' })
    await repositories.comments.create(post.id, author.id, 'a comment')
    await repositories.devices.add(author.id, 'device-1', 'Laptop')
    await repositories.passkeys.add(author.id, { credentialId: 'credential-1', publicKey: 'key', counter: 0, transports: [], name: 'Émile\'s phone' })
    await app.auditTrail.flush()
    // Enough rows that PostgreSQL's statistics make a rare search's trigram index the cheap path.
    const { db } = app.database
    for (let chunk = 0; chunk < 3; chunk++) {
      const at = new Date(Date.UTC(2025, 0, 1, chunk)).toISOString()
      const users = Array.from({ length: 1000 }, (_, index) => ({
        id: `00000000-0000-7000-800${chunk}-${String(index).padStart(12, '0')}`, email: `filler-${chunk}-${index}@example.com`, name: `Filler ${chunk} ${index}`, email_verified: 0, created_at: at, updated_at: at
      }))
      await db.insertInto('users').values(users).execute()
      await db.insertInto('posts').values(users.map((user) => ({ id: user.id, author_id: user.id, title: user.name, body: 'lorem ipsum', status: 'published', created_at: at, updated_at: at }))).execute()
      await db.insertInto('comments').values(users.map((user) => ({ id: user.id, post_id: post.id, author_id: user.id, body: user.name, created_at: at }))).execute()
    }
    const cutoffs = { idleBefore: '2000-01-01T00:00:00.000Z', createdBefore: '2000-01-01T00:00:00.000Z' }

    const variants: Array<[string, Partial<CollectionRequest>]> = [
      ['offset page', {}],
      ['cursor page', { pagination: { kind: 'cursor', limit: 20, after: null } }],
      ['createdAfter', { createdAfter: '2000-01-01T00:00:00.000Z' }],
      ['newest first', { sort: [{ field: 'created_at', descending: true }, { field: 'id', descending: true }] }]
    ]
    const searched: Array<[string, Partial<CollectionRequest>]> = [['search', { search: 'émile' }], ['short search', { search: 'ém' }]]
    const collections: Array<{
      name: string
      table: string
      searches?: boolean
      filters?: Array<Record<string, string>>
      list: (request: CollectionRequest) => Promise<unknown>
    }> = [
      { name: 'users', table: 'users', searches: true, list: async (request) => await repositories.users.list(request) },
      { name: 'posts (moderator)', table: 'posts', searches: true, filters: [{}, { status: 'draft' }], list: async (request) => await repositories.posts.list(request, { viewerId: author.id, seesAll: true }) },
      { name: 'posts (anonymous)', table: 'posts', searches: true, filters: [{}, { status: 'published' }], list: async (request) => await repositories.posts.list(request, { viewerId: null, seesAll: false }) },
      { name: 'posts (signed in)', table: 'posts', searches: true, filters: [{}, { status: 'draft' }], list: async (request) => await repositories.posts.list(request, { viewerId: author.id, seesAll: false }) },
      { name: "a user's posts", table: 'posts', searches: true, filters: [{}, { status: 'published' }], list: async (request) => await repositories.posts.list(request, { viewerId: null, seesAll: false }, author.id) },
      { name: 'comments', table: 'comments', searches: true, list: async (request) => await repositories.comments.list(post.id, request) },
      { name: 'sessions', table: 'sessions', list: async (request) => await repositories.sessions.list(author.id, cutoffs, request) },
      { name: 'devices', table: 'trusted_devices', searches: true, list: async (request) => await repositories.devices.list(author.id, request) },
      { name: 'passkeys', table: 'passkeys', searches: true, list: async (request) => await repositories.passkeys.list(author.id, request) },
      { name: 'audit log', table: 'audit_logs', filters: [{}, { event: 'user.created' }, { actor_id: author.id }, { event: 'user.created', actor_id: author.id }], list: async (request) => await repositories.auditLogs.list(request) }
    ]
    for (const collection of collections) {
      t.test(collection.name, async (t) => {
        for (const filters of collection.filters ?? [{}]) {
          for (const [variant, overrides] of [...variants, ...(collection.searches === true ? searched : [])]) {
            ran.length = 0
            await collection.list({ ...firstPage({ sort: [{ field: 'created_at', descending: false }, { field: 'id', descending: false }] }), filters, ...overrides })
            t.ok(ran.length > 0, 'the page ran its queries')
            for (const query of ran) {
              const plan = await queryPlan(app.database, collection.table, { compile: () => query })
              const what = `${variant} ${JSON.stringify(filters)}: ${query.sql}\n${plan}`
              if (backend.url === null) t.notMatch(plan, FULL_SCAN_SQLITE, what)
              else t.notMatch(plan, /Seq Scan/, what)
              // The device and passkey searches read one user's few rows; the others use the trigram
              // index on SQLite. PostgreSQL picks its pg_trgm index by cost, which needs a large
              // table (see docs/performance.md): here any index will do.
              if (backend.url === null && variant === 'search' && !['trusted_devices', 'passkeys'].includes(collection.table)) {
                t.match(plan, /_search VIRTUAL TABLE/, `${what}: trigram index`)
              }
            }
          }
        }
      })
    }
  })

  t.test(`${backend.name}: counts and offset depth`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const { posts, users } = app.repositories
    const alice = await createAccount(app, { name: 'Alice' })
    for (const status of ['draft', 'published', 'published', 'archived'] as const) await posts.create(alice.id, { title: `t ${status}`, body: 'b', status })
    const count = async (
      visibility: { viewerId: string | null, seesAll: boolean },
      filters: Record<string, string> = {}
    ) => {
      const page = await posts.list({ ...firstPage(), filters }, visibility)
      return page.kind === 'offset' ? [page.total, page.totalExact] : []
    }

    t.test('maintained counts follow inserts, status changes and deletes', async (t) => {
      const moderator = { viewerId: null, seesAll: true }
      const anonymous = { viewerId: null, seesAll: false }
      t.same(await count(moderator), [4, true])
      t.same(await count(moderator, { status: 'published' }), [2, true])
      t.same(await count(anonymous), [2, true])
      const draft = (await posts.list({ ...firstPage(), filters: { status: 'draft' } }, moderator)).items[0]
      await posts.update(draft?.id ?? '', { status: 'published' })
      t.same(await count(moderator, { status: 'published' }), [3, true])
      t.same(await count(moderator, { status: 'draft' }), [0, true])
      await posts.delete(draft?.id ?? '')
      t.same(await count(moderator), [3, true])
      t.same(await count(anonymous), [2, true])
      const usersTotal = async () => {
        const page = await users.list(firstPage())
        return page.kind === 'offset' ? page.total : NaN
      }
      const before = await usersTotal()
      const bob = await createAccount(app, { name: 'Bob' })
      t.equal(await usersTotal(), before + 1)
      await users.delete(bob.id)
      t.equal(await usersTotal(), before)
    })

    /** `count` audit entries of `event`, a millisecond apart from `since`. */
    const auditEntries = (count: number, event: string, since: number) => Array.from({ length: count }, (_, index) => ({
      id: `00000000-0000-7000-8000-${String(since + index).padStart(12, '0')}`,
      event,
      actor_id: alice.id,
      target_id: null,
      ip: null,
      user_agent: null,
      outcome: 'success',
      details: '{}',
      created_at: new Date(Date.UTC(2026, 0, 1) + since + index).toISOString()
    }))

    t.test('a count past the limit (COLLECTION_COUNT_LIMIT, 1,000 by default) stops there and says so', async (t) => {
      const limit = COUNT_LIMITS.default
      t.equal(app.config.collectionCountLimit, limit)
      await app.repositories.auditLogs.insertMany(auditEntries(limit, 'user.login', 0))
      await app.auditTrail.flush()
      const exactly = await app.repositories.auditLogs.list({ ...firstPage(), filters: { event: 'user.login' } })
      t.match(exactly, { kind: 'offset', total: limit, totalExact: true }, 'as many matches as the limit: still exact')
      await app.repositories.auditLogs.insertMany(auditEntries(5, 'user.login', limit))
      const filtered = await app.repositories.auditLogs.list({ ...firstPage(), filters: { event: 'user.login' } })
      t.match(filtered, { kind: 'offset', total: limit, totalExact: false, totalPages: Math.ceil(limit / 50) })
      const beyond = await app.repositories.auditLogs.list({ ...firstPage(), filters: { event: 'user.login' }, pagination: { kind: 'offset', page: 21, limit: 50 } })
      t.match(beyond, { kind: 'offset', total: limit, totalExact: false }, 'a page past totalPages answers normally')
      t.equal(beyond.items.length, 5, 'and holds the records beyond the count')
      const all = await app.repositories.auditLogs.list(firstPage())
      t.ok(all.kind === 'offset' && all.total > limit && all.totalExact, 'the unfiltered count is maintained: exact past the limit')
    })

    t.test('a search too short for trigrams looks at the first 10,000 records of the ordering, its count at the first 1,000, and cursor pages go on past them', async (t) => {
      // Before every other user, oldest first: a rare name at the 11th and at the 10,003rd place.
      const { db } = app.database
      for (let chunk = 0; chunk * 1000 < OFFSET_REACH + 5; chunk++) {
        const rows = Array.from({ length: Math.min(1000, OFFSET_REACH + 5 - chunk * 1000) }, (_, offset) => {
          const index = chunk * 1000 + offset
          const at = new Date(Date.UTC(2020, 0, 1) + index * 1000).toISOString()
          return { id: `00000000-0000-7000-8001-${String(index).padStart(12, '0')}`, email: `window-${index}@example.com`, name: index === 10 || index === 1500 || index === OFFSET_REACH + 2 ? `Rare qx ${index}` : `Filler ${index}`, email_verified: 0, created_at: at, updated_at: at }
        })
        await db.insertInto('users').values(rows).execute()
      }
      const oldestFirst = [{ field: 'created_at', descending: false }, { field: 'id', descending: false }]
      const offset = await users.list(firstPage({ sort: oldestFirst, search: 'qx' }))
      t.match(offset, { kind: 'offset', total: 1, totalExact: false }, 'the count looked at the first 1,000 records only, and says so')
      t.same(offset.items.map((user) => user.name), ['Rare qx 10', 'Rare qx 1500'], 'the page at the first 10,000')

      const firstRequest = firstPage({ sort: oldestFirst, search: 'qx', pagination: { kind: 'cursor', limit: 50, after: null } })
      const first = await users.list(firstRequest)
      t.same(first.items.map((user) => user.name), ['Rare qx 10', 'Rare qx 1500'])
      if (first.kind !== 'cursor' || first.nextCursor === null) throw new Error('expected a cursor past the window')
      t.equal(first.hasMore, true, 'the window ended before the page was full: there is more')
      const after = new CursorCodec(TEST_SECRET).decode(first.nextCursor, queryFingerprint(firstRequest))
      t.same(after, ['2020-01-01T02:46:39.000Z', '00000000-0000-7000-8001-000000009999'], "the next page starts after the window's last record")
      const second = await users.list({ ...firstRequest, pagination: { kind: 'cursor', limit: 50, after } })
      t.same(second.items.map((user) => user.name), [`Rare qx ${OFFSET_REACH + 2}`], 'and finds the match beyond it')
      t.match(second, { hasMore: false, nextCursor: null })

      t.same((await users.list(firstPage({ sort: oldestFirst, search: 'rare qx' }))).items.map((user) => user.name), ['Rare qx 10', 'Rare qx 1500', `Rare qx ${OFFSET_REACH + 2}`],
        'a search of 3 characters or more looks at every record')
    })
  })
}
