import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { type Account, createAccount, TEST_PASSWORD, withToken } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { backends } from '../helpers/database.js'

/*
 * A cursor is signed with its collection's scope (src/collection/query.ts): the collection, and
 * the owner and viewer where they decide what it holds. Every list here is read with the same
 * sort and no filter, so only that binding tells the cursors apart.
 */
const QUERY = 'limit=1&sort=created_at'

async function get (app: FastifyInstance, caller: Account | null, url: string) {
  return await app.inject(caller === null ? { method: 'GET', url } : withToken(caller.token, { method: 'GET', url }))
}

/** The next-page cursor of `path`'s first page, as `caller` sees it. */
async function cursorOf (app: FastifyInstance, caller: Account | null, path: string): Promise<string> {
  const first = await get(app, caller, `${path}?${QUERY}&cursor=`)
  const cursor = first.json().meta?.nextCursor
  if (typeof cursor !== 'string') throw new Error(`no next page at ${path}: ${first.body}`)
  return cursor
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const alice = await createAccount(app)
    const bob = await createAccount(app)
    for (const account of [alice, bob]) {
      // A second session each, so that their session lists have a next page.
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })
      if (login.statusCode !== 200) throw new Error(login.body)
    }
    for (const title of ['First', 'Second']) await app.repositories.posts.create(alice.id, { title, body: 'x', status: 'published' })

    /** Asserts that `cursor`, sent by `caller` to `path` with the same sort, is refused as a bad cursor. */
    async function refused (t: Test, caller: Account | null, path: string, cursor: string, label: string) {
      const response = await get(app, caller, `${path}?${QUERY}&cursor=${encodeURIComponent(cursor)}`)
      t.equal(response.statusCode, 400, `${label}: 400`)
      t.match(response.json(), { error: { code: 'VALIDATION_FAILED', details: [{ path: '/cursor' }] } }, `${label}: refused as a bad cursor`)
    }
    async function accepted (t: Test, caller: Account | null, path: string, cursor: string, label: string) {
      const response = await get(app, caller, `${path}?${QUERY}&cursor=${encodeURIComponent(cursor)}`)
      t.equal(response.statusCode, 200, `${label}: the cursor reads its own collection's next page`)
    }

    t.test('a cursor from GET /users is refused by sessions, passkeys and posts', async (t) => {
      const cursor = await cursorOf(app, alice, '/api/v1/users')
      await accepted(t, alice, '/api/v1/users', cursor, 'users')
      await refused(t, alice, '/api/v1/auth/sessions', cursor, 'sessions')
      await refused(t, alice, '/api/v1/auth/passkeys', cursor, 'passkeys')
      await refused(t, alice, '/api/v1/posts', cursor, 'posts')
      await refused(t, alice, `/api/v1/users/${alice.id}/posts`, cursor, 'a user\'s posts')
    })

    t.test('a cursor from GET /posts is refused by users, a user\'s posts, and other viewers', async (t) => {
      const cursor = await cursorOf(app, alice, '/api/v1/posts')
      await accepted(t, alice, '/api/v1/posts', cursor, 'posts')
      await refused(t, alice, '/api/v1/users', cursor, 'users')
      await refused(t, alice, `/api/v1/users/${alice.id}/posts`, cursor, 'a user\'s posts')
      await refused(t, bob, '/api/v1/posts', cursor, 'posts, as another user')
      await refused(t, null, '/api/v1/posts', cursor, 'posts, anonymously')
    })

    t.test('a cursor for one user\'s own collection is refused for another user', async (t) => {
      const cursor = await cursorOf(app, alice, '/api/v1/auth/sessions')
      await accepted(t, alice, '/api/v1/auth/sessions', cursor, 'alice\'s sessions')
      await refused(t, bob, '/api/v1/auth/sessions', cursor, 'bob\'s sessions')
      await refused(t, alice, '/api/v1/users', cursor, 'users')
      await refused(t, alice, '/api/v1/auth/passkeys', cursor, 'alice\'s passkeys')
    })
  })
}
