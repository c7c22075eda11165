import t from 'tap'
import type { CollectionRequest } from '../../src/collection/query.js'
import { backends, build, createAccount } from '../helper.js'

/**
 * Collection pages are compiled once per shape and later pages only bind values: a page
 * must never be answered with another request's values, and values that change the SQL
 * (a filter left out, or applied without a value) must not share a compiled query.
 */
const firstPage = (overrides: Partial<CollectionRequest> = {}): CollectionRequest => ({
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
