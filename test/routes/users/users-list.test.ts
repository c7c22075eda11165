import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createAccount, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

/** Inserts users straight through the repository (no hashing), in name order a, b, c, …. */
async function seed (app: FastifyInstance, names: string[]): Promise<string[]> {
  const ids: string[] = []
  for (const name of names) {
    ids.push((await app.repositories.users.create({ email: uniqueEmail(name.replace(/\W/g, '')), name, passwordHash: null, roles: ['user'], emailVerified: false })).id)
  }
  return ids
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const caller = await createAccount(app, { name: 'Caller' })
    const list = async (query: string) => await app.inject(withToken(caller.token, { method: 'GET', url: `/api/v1/users?${query}` }))
    const names = Array.from({ length: 24 }, (_, index) => `Member ${String(index).padStart(2, '0')}`)
    await seed(app, names)

    t.test('defaults: page 1, limit 20, total counts all', async (t) => {
      const response = await list('')
      t.equal(response.statusCode, 200)
      const body = response.json()
      t.same(body.meta, { kind: 'offset', page: 1, limit: 20, total: 25, totalExact: true, totalPages: 2 })
      t.equal(body.data.length, 20)
      t.notMatch(response.body, /password|hash/i)
    })

    t.test('limit and page at their boundaries', async (t) => {
      for (const [query, status] of [['limit=0', 400], ['limit=1', 200], ['limit=100', 200], ['limit=101', 400],
        ['page=0', 400], ['page=1', 200], ['page=-1', 400], ['limit=abc', 400], ['limit=1.5', 400],
        ['limit=100&page=100', 200], ['limit=100&page=101', 400], ['limit=100&page=2147483647', 400], ['limit=100&page=2147483648', 400], ['page=461168601842738800', 400], ['page=1e400', 400], ['page=Infinity', 400], ['limit=-Infinity', 400]] as const) {
        const response = await list(query)
        t.equal(response.statusCode, status, query)
        if (status === 400) t.equal(response.json().error.code, 'VALIDATION_FAILED')
      }
      t.equal((await list('limit=1')).json().data.length, 1)
      t.same((await list('limit=100')).json().meta, { kind: 'offset', page: 1, limit: 100, total: 25, totalExact: true, totalPages: 1 })
    })

    t.test('offset walk: pages of 10 cover everything once, past the end is empty', async (t) => {
      const seen: string[] = []
      for (const page of [1, 2, 3]) {
        const body = (await list(`limit=10&page=${page}`)).json()
        t.same(body.meta, { kind: 'offset', page, limit: 10, total: 25, totalExact: true, totalPages: 3 })
        seen.push(...body.data.map((user: { id: string }) => user.id))
      }
      t.equal(new Set(seen).size, 25)
      t.same((await list('limit=10&page=4')).json().data, [])
    })

    t.test('search is a case-insensitive substring of the name; total counts matches', async (t) => {
      const body = (await list('search=MEMBER%201&sort=name')).json()
      t.same(body.data.map((user: { name: string }) => user.name), ['Member 10', 'Member 11', 'Member 12', 'Member 13', 'Member 14',
        'Member 15', 'Member 16', 'Member 17', 'Member 18', 'Member 19'])
      t.equal(body.meta.total, 10)
      t.equal((await list('search=%25')).json().meta.total, 0, 'LIKE wildcards are literal')
      t.equal((await list('search=nobody')).json().meta.total, 0)
    })

    t.test('sort by allow-listed fields, - for descending, unknown refused', async (t) => {
      const names = (await list('sort=-name&limit=3')).json().data.map((user: { name: string }) => user.name)
      t.same(names, ['Member 23', 'Member 22', 'Member 21'])
      const refused = await list('sort=password_hash')
      t.equal(refused.statusCode, 400)
      t.same(refused.json().error.details, [{ path: '/sort/0', message: 'must be one of: id, -id, email, -email, name, -name, created_at, -created_at' }])
      t.same((await list('sort=-name&sort=email&limit=3')).json().data, (await list('sort=-name,email&limit=3')).json().data, 'repeated or comma-separated')
      t.equal((await list('sort=name;drop')).statusCode, 400)
    })

    t.test('fields selects what is returned; id always', async (t) => {
      const body = (await list('fields=name&limit=2')).json()
      t.same(Object.keys(body.data[0]).sort(), ['id', 'name'])
      t.equal((await list('fields=password_hash')).statusCode, 400)
    })

    t.test('createdAfter is strict', async (t) => {
      const all = (await list('limit=100&sort=created_at')).json().data
      const newest = all.at(-1).created_at
      t.equal((await list(`createdAfter=${encodeURIComponent(newest)}`)).json().meta.total, 0)
      t.equal((await list('createdAfter=2000-01-01')).json().meta.total, 25)
      t.equal((await list('createdAfter=yesterday')).statusCode, 400)
    })

    t.test('cursor walk: stable across inserts between pages, no duplicates, no gaps', async (t) => {
      const seen: string[] = []
      let cursor = ''
      let pages = 0
      for (;;) {
        const response = await list(`limit=10&sort=name&cursor=${encodeURIComponent(cursor)}`)
        t.equal(response.statusCode, 200)
        const body = response.json()
        t.same(Object.keys(body.meta).sort(), ['hasMore', 'kind', 'nextCursor'])
        t.equal(body.meta.kind, 'cursor')
        seen.push(...body.data.map((user: { name: string }) => user.name))
        pages++
        // Rows inserted before the cursor position must not shift the walk.
        if (pages === 1) await seed(app, ['Aardvark'])
        if (!body.meta.hasMore) {
          t.equal(body.meta.nextCursor, null)
          break
        }
        cursor = body.meta.nextCursor
      }
      t.equal(pages, 3)
      t.equal(new Set(seen).size, seen.length, 'no duplicates')
      t.same(seen, [...seen].sort(), 'in order')
      t.same(seen.filter((name) => name.startsWith('Member')).length, 24, 'no gaps')
      t.notOk(seen.includes('Aardvark'), 'a row inserted behind the cursor is not replayed')
    })

    t.test('cursor walk with mixed directions and ties', async (t) => {
      await seed(app, ['Twin', 'Twin', 'Twin'])
      const seen: string[] = []
      let cursor = ''
      for (;;) {
        const body = (await list(`limit=2&sort=-name,created_at&cursor=${encodeURIComponent(cursor)}`)).json()
        seen.push(...body.data.map((user: { id: string }) => user.id))
        if (!body.meta.hasMore) break
        cursor = body.meta.nextCursor
      }
      const total = (await list('limit=1')).json().meta.total
      t.equal(seen.length, total)
      t.equal(new Set(seen).size, total)
    })

    t.test('a tampered cursor is refused', async (t) => {
      const { nextCursor } = (await list('limit=2&cursor=')).json().meta
      const response = await list(`limit=2&cursor=${encodeURIComponent(`x${nextCursor as string}`)}`)
      t.equal(response.statusCode, 400)
      t.equal(response.json().error.details[0].path, '/cursor')
    })

    t.test('the list needs a token', async (t) => {
      const response = await app.inject({ method: 'GET', url: '/api/v1/users' })
      t.equal(response.statusCode, 401)
    })

    // Last: it adds users the counts above do not expect.
    t.test('search ignores case beyond ASCII too (SQLite\'s own lower() folds only A-Z)', async (t) => {
      await seed(app, ['Émile Zola', 'Ärger Öztürk'])
      for (const [search, expected] of [['Émile', ['Émile Zola']], ['émile', ['Émile Zola']], ['ÉMILE', ['Émile Zola']],
        ['ärger ÖZ', ['Ärger Öztürk']], ['ÜRK', ['Ärger Öztürk']], ['emile', []]] as const) {
        const body = (await list(`search=${encodeURIComponent(search)}`)).json()
        t.same(body.data.map((user: { name: string }) => user.name), expected, search)
      }
    })
  })
}

for (const backend of backends()) {
  t.test(`${backend.name}: COLLECTION_COUNT_LIMIT moves where filtered counts stop`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url, env: { COLLECTION_COUNT_LIMIT: '100' } })
    const caller = await createAccount(app, { name: 'Caller' })
    const at = new Date(Date.UTC(2025, 0, 1)).toISOString()
    await app.database.db.insertInto('users').values(Array.from({ length: 103 }, (_, index) => ({
      id: `00000000-0000-7000-8000-${String(index).padStart(12, '0')}`, email: `capped-${index}@example.com`, name: `Capped ${index}`, email_verified: 0, created_at: at, updated_at: at
    }))).execute()
    const meta = async (query: string) => (await app.inject(withToken(caller.token, { method: 'GET', url: `/api/v1/users?${query}` }))).json()
    t.same((await meta('search=capped')).meta, { kind: 'offset', page: 1, limit: 20, total: 100, totalExact: false, totalPages: 5 })
    const past = await meta('search=capped&page=6')
    t.same(past.meta, { kind: 'offset', page: 6, limit: 20, total: 100, totalExact: false, totalPages: 5 }, 'a page past totalPages answers normally')
    t.equal(past.data.length, 3, 'with the matches beyond the count')
    t.same((await meta('search=capped&limit=100&page=2')).data.length, 3)
    t.same((await meta('')).meta, { kind: 'offset', page: 1, limit: 20, total: 104, totalExact: true, totalPages: 6 }, 'unfiltered: exact past the limit')
    t.same((await meta('limit=100&page=101')).error.code, 'VALIDATION_FAILED', 'offset pages still reach 10,000 records, not further')
    t.equal((await app.inject(withToken(caller.token, { method: 'GET', url: '/api/v1/users?limit=100&page=100' }))).statusCode, 200)
  })
}
