import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

function as (app: FastifyInstance, caller: Account | null, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: Record<string, unknown>) {
  const options = { method, url, ...(payload !== undefined && { payload }) }
  return app.inject(caller === null ? options : withToken(caller.token, options))
}

async function write (app: FastifyInstance, author: Account, title: string, status?: string, body = `Body of ${title}`) {
  const response = await as(app, author, 'POST', '/api/v1/posts', { title, body, ...(status !== undefined && { status }) })
  if (response.statusCode !== 201) throw new Error(response.body)
  return response.json().data as { id: string, status: string }
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('creating posts: 201, Location, draft by default, field rules at their edges', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const author = await createAccount(app)
      const created = await as(app, author, 'POST', '/api/v1/posts', { title: 'Hello', body: 'World' })
      t.equal(created.statusCode, 201)
      const post = created.json().data
      t.same(Object.keys(post).sort(), ['author_id', 'body', 'created_at', 'id', 'status', 'title', 'updated_at'])
      t.match(post, { author_id: author.id, title: 'Hello', body: 'World', status: 'draft' })
      t.equal(created.headers.location, `/api/v1/posts/${String(post.id)}`)
      const cases: Array<[Record<string, unknown>, number]> = [
        [{ title: '', body: 'b' }, 400], [{ title: 't'.repeat(200), body: 'b' }, 201], [{ title: 't'.repeat(201), body: 'b' }, 400],
        [{ title: 't', body: 'b'.repeat(5000) }, 201], [{ title: 't', body: 'b'.repeat(5001) }, 400], [{ title: 't', body: '' }, 400],
        [{ title: 't', body: 'b', status: 'deleted' }, 400], [{ title: 't', body: 'b', author_id: author.id }, 400]
      ]
      for (const [payload, status] of cases) {
        const response = await as(app, author, 'POST', '/api/v1/posts', payload)
        t.equal(response.statusCode, status, JSON.stringify(payload).slice(0, 60))
      }
      t.equal((await as(app, null, 'POST', '/api/v1/posts', { title: 't', body: 'b' })).statusCode, 401)
      const nobody = await createAccount(app)
      await app.database.db.deleteFrom('user_roles').where('user_id', '=', nobody.id).execute()
      const refused = await as(app, nobody, 'POST', '/api/v1/posts', { title: 't', body: 'b' })
      t.equal(refused.statusCode, 403, 'anonymous (no roles) cannot create')
      t.equal(refused.json().error.message, 'Permission denied. Requires: create')
    })

    t.test('visibility: published for everyone, drafts for their author, everything for moderators', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const author = await createAccount(app)
      const reader = await createAccount(app)
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const published = await write(app, author, 'Public', 'published')
      const draft = await write(app, author, 'Secret draft')
      const archived = await write(app, author, 'Old', 'archived')
      const titles = async (caller: Account | null, query = '') =>
        (await as(app, caller, 'GET', `/api/v1/posts?sort=title${query}`)).json().data.map((post: { title: string }) => post.title)
      t.same(await titles(null), ['Public'])
      t.same(await titles(reader), ['Public'])
      t.same(await titles(author), ['Old', 'Public', 'Secret draft'])
      t.same(await titles(moderator), ['Old', 'Public', 'Secret draft'])
      t.same(await titles(null, '&status=draft'), [], 'a filter matching nothing is an empty page')
      t.same(await titles(author, '&status=draft'), ['Secret draft'])
      t.equal((await as(app, null, 'GET', `/api/v1/posts/${draft.id}`)).statusCode, 404, 'a hidden post is not found')
      t.equal((await as(app, reader, 'GET', `/api/v1/posts/${draft.id}`)).statusCode, 404)
      t.equal((await as(app, author, 'GET', `/api/v1/posts/${draft.id}`)).statusCode, 200)
      t.equal((await as(app, null, 'GET', `/api/v1/posts/${published.id}`)).statusCode, 200)
      t.equal((await as(app, moderator, 'GET', `/api/v1/posts/${archived.id}`)).statusCode, 200)
      const byAuthor = await as(app, null, 'GET', `/api/v1/users/${author.id}/posts`)
      t.same(byAuthor.json().data.map((post: { title: string }) => post.title), ['Public'])
      t.equal((await as(app, author, 'GET', `/api/v1/users/${author.id}/posts`)).json().meta.total, 3)
      t.equal((await as(app, null, 'GET', '/api/v1/users/01890000-0000-7000-8000-000000000000/posts')).statusCode, 404)
      const bad = await app.inject({ method: 'GET', url: '/api/v1/posts', headers: { authorization: 'Bearer nonsense' } })
      t.equal(bad.statusCode, 401, 'a bad token is refused, not ignored')
    })

    t.test('editing and deleting: the author, or a moderator or admin', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const author = await createAccount(app)
      const other = await createAccount(app)
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const admin = await createAccount(app, { roles: ['admin'] })
      const post = await write(app, author, 'Mine', 'published')
      const edited = await as(app, author, 'PATCH', `/api/v1/posts/${post.id}`, { title: 'Mine, edited' })
      t.equal(edited.statusCode, 200)
      t.equal(edited.json().data.title, 'Mine, edited')
      t.ok(edited.json().data.updated_at >= edited.json().data.created_at)
      const refused = await as(app, other, 'PATCH', `/api/v1/posts/${post.id}`, { title: 'Hijacked' })
      t.equal(refused.statusCode, 403)
      t.equal(refused.json().error.message, 'Permission denied. Requires: write')
      t.equal((await as(app, other, 'DELETE', `/api/v1/posts/${post.id}`)).statusCode, 403)
      t.equal((await as(app, moderator, 'PATCH', `/api/v1/posts/${post.id}`, { status: 'archived' })).statusCode, 200)
      t.equal((await as(app, admin, 'PATCH', `/api/v1/posts/${post.id}`, { status: 'published' })).statusCode, 200)
      t.equal((await as(app, moderator, 'DELETE', `/api/v1/posts/${post.id}`)).statusCode, 204)
      t.equal((await as(app, author, 'DELETE', `/api/v1/posts/${post.id}`)).statusCode, 404)
      const own = await write(app, author, 'Another')
      t.equal((await as(app, author, 'DELETE', `/api/v1/posts/${own.id}`)).statusCode, 204)
    })

    t.test('comments: on visible posts, edited and deleted by their author or a moderator', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const author = await createAccount(app)
      const commenter = await createAccount(app)
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const post = await write(app, author, 'Discuss', 'published')
      const draft = await write(app, author, 'Hidden')
      const added = await as(app, commenter, 'POST', `/api/v1/posts/${post.id}/comments`, { body: 'First!' })
      t.equal(added.statusCode, 201)
      const comment = added.json().data
      t.same(Object.keys(comment).sort(), ['author_id', 'body', 'created_at', 'id', 'post_id'])
      t.equal((await as(app, commenter, 'POST', `/api/v1/posts/${draft.id}/comments`, { body: 'x' })).statusCode, 404, 'not on a hidden post')
      for (const [body, status] of [['c'.repeat(2000), 201], ['c'.repeat(2001), 400], ['', 400]] as const) {
        t.equal((await as(app, commenter, 'POST', `/api/v1/posts/${post.id}/comments`, { body })).statusCode, status)
      }
      const list = await as(app, null, 'GET', `/api/v1/posts/${post.id}/comments`)
      t.equal(list.statusCode, 200)
      t.equal(list.json().meta.total, 2)
      t.equal((await as(app, null, 'GET', `/api/v1/posts/${draft.id}/comments`)).statusCode, 404)
      const url = `/api/v1/posts/${post.id}/comments/${String(comment.id)}`
      t.equal((await as(app, author, 'PATCH', url, { body: 'Edited by the post author' })).statusCode, 403, 'the post\'s author is not the comment\'s')
      t.equal((await as(app, commenter, 'PATCH', url, { body: 'Edited' })).json().data.body, 'Edited')
      t.equal((await as(app, moderator, 'DELETE', url)).statusCode, 204)
      t.equal((await as(app, commenter, 'DELETE', url)).statusCode, 404)
    })

    t.test('deleting a user removes their posts and comments; nothing dangles', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const leaver = await createAccount(app)
      const stayer = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      const leaversPost = await write(app, leaver, 'Leaving', 'published')
      const stayersPost = await write(app, stayer, 'Staying', 'published')
      await as(app, stayer, 'POST', `/api/v1/posts/${leaversPost.id}/comments`, { body: 'on the leaver\'s post' })
      await as(app, leaver, 'POST', `/api/v1/posts/${stayersPost.id}/comments`, { body: 'by the leaver' })
      await as(app, stayer, 'POST', `/api/v1/posts/${stayersPost.id}/comments`, { body: 'by the stayer' })
      t.equal((await as(app, admin, 'DELETE', `/api/v1/users/${leaver.id}`)).statusCode, 204)
      const { db } = app.database
      t.same((await db.selectFrom('posts').select('title').execute()).map((row) => row.title), ['Staying'])
      t.same((await db.selectFrom('comments').select('body').execute()).map((row) => row.body), ['by the stayer'])
      const orphans = await db.selectFrom('comments').leftJoin('posts', 'posts.id', 'comments.post_id')
        .leftJoin('users', 'users.id', 'comments.author_id').select('comments.id')
        .where((eb) => eb.or([eb('posts.id', 'is', null), eb('users.id', 'is', null)])).execute()
      t.same(orphans, [], 'no comment without its post or author')
    })
  })
}
