import { sql } from 'kysely'
import t from 'tap'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const author = await createAccount(app)
    for (let n = 0; n < 25; n++) {
      await app.repositories.posts.create(author.id, {
        title: `Post ${String(n).padStart(2, '0')}`,
        body: n % 5 === 0 ? 'mentions kangaroos' : 'plain text',
        status: n % 4 === 3 ? 'draft' : 'published'
      })
    }
    const published = 25 - 6
    const list = async (query: string, asAuthor = false) => {
      const options = { method: 'GET' as const, url: `/api/v1/posts?${query}` }
      const response = await app.inject(asAuthor ? withToken(author.token, options) : options)
      if (response.statusCode !== 200) throw new Error(`${query}: ${response.body}`)
      return response.json() as { data: Array<Record<string, string>>, meta: Record<string, unknown> }
    }

    t.test('25 posts in pages of 10 by offset', async (t) => {
      const pages = [await list('limit=10&page=1', true), await list('limit=10&page=2', true), await list('limit=10&page=3', true)]
      t.same(pages.map((page) => page.data.length), [10, 10, 5])
      t.same(pages[0]?.meta, { kind: 'offset', page: 1, limit: 10, total: 25, totalExact: true, totalPages: 3 })
      t.equal(new Set(pages.flatMap((page) => page.data.map((post) => post.id))).size, 25)
      t.same((await list('limit=10')).meta, { kind: 'offset', page: 1, limit: 10, total: published, totalExact: true, totalPages: 2 }, 'anonymous: published only')
    })

    t.test('25 posts in pages of 10 by cursor, with posts added and edited between pages', async (t) => {
      const seen: string[] = []
      let cursor = ''
      for (let page = 0; ; page++) {
        const body = await list(`limit=10&sort=title&cursor=${encodeURIComponent(cursor)}`, true)
        seen.push(...body.data.map((post) => post.title ?? ''))
        if (page === 0) {
          await app.repositories.posts.create(author.id, { title: 'Post 00a (behind the cursor)', body: 'x', status: 'published' })
          await app.repositories.posts.create(author.id, { title: 'Post 99 (ahead)', body: 'x', status: 'published' })
        }
        if (body.meta.hasMore !== true) break
        cursor = String(body.meta.nextCursor)
      }
      t.equal(new Set(seen).size, seen.length, 'no duplicates')
      t.same(seen, [...seen].sort(), 'in order')
      t.equal(seen.filter((title) => /^Post \d\d$/.test(title)).length, 25, 'no gaps')
      t.ok(seen.includes('Post 99 (ahead)'), 'rows added ahead of the cursor are reached')
      t.notOk(seen.includes('Post 00a (behind the cursor)'))
    })

    t.test('sort, fields, search, status and createdAfter', async (t) => {
      const sorted = await list('sort=-title&limit=3')
      t.same(sorted.data.map((post) => post.title), ['Post 99 (ahead)', 'Post 24', 'Post 22'])
      const multi = await list('sort=status,-created_at&limit=50', true)
      const statuses = multi.data.map((post) => post.status)
      t.same(statuses, [...statuses].sort(), 'primary key ascending')
      const slim = await list('fields=title&limit=1')
      t.same(Object.keys(slim.data[0] ?? {}).sort(), ['id', 'title'])
      const kangaroos = await list('search=KANGAROO&limit=50', true)
      t.same(kangaroos.data.map((post) => post.title).sort(), ['Post 00', 'Post 05', 'Post 10', 'Post 15', 'Post 20'])
      t.equal((await list('search=Post%2001&limit=50')).meta.total, 1, 'the title is searched too')
      t.equal((await list('status=draft&limit=50', true)).meta.total, 6)
      const all = (await list('sort=created_at&limit=100', true)).data
      const pivot = all[9]?.created_at ?? ''
      const after = await list(`createdAfter=${encodeURIComponent(pivot)}&limit=100`, true)
      t.ok(after.data.every((post) => (post.created_at ?? '') > pivot))
      for (const bad of ['sort=body;drop', 'sort=author', 'fields=secret', 'status=deleted', 'limit=101', 'page=0', 'createdAfter=soon', 'cursor=forged.cursor']) {
        const response = await app.inject({ method: 'GET', url: `/api/v1/posts?${bad}` })
        t.equal(response.statusCode, 400, bad)
        t.equal(response.json().error.code, 'VALIDATION_FAILED', bad)
      }
    })

    if (backend.name === 'postgres') {
      t.test('the cursor query is answered from an index on PostgreSQL', async (t) => {
        await sql`analyze posts`.execute(app.database.db)
        // The table is tiny, so a sequential scan would win on cost; forbidding it shows whether
        // an index can serve the query at all. One transaction pins one connection.
        const plan = await app.database.db.transaction().execute(async (trx) => {
          await sql`set local enable_seqscan = off`.execute(trx)
          return await sql<{ 'QUERY PLAN': string }>`explain select id, title from posts
            where status = 'published' and (created_at, id) < (${new Date().toISOString()}, ${'ffffffff-ffff-7fff-bfff-ffffffffffff'})
            order by created_at desc, id desc limit 11`.execute(trx)
        })
        const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n')
        t.match(text, /Index (Only )?Scan( Backward)? using posts_status_created_at_id/, text)
      })
    }
  })
}
