import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { liveSessionsOldestFirst, stepUpOf } from '../../../src/store/sessions.js'
import { type Account, claimsOf, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends, queryPlan } from '../../helpers/database.js'

async function login (app: FastifyInstance, account: Account, device?: { id: string, name?: string }) {
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password, device } })
  if (response.statusCode !== 200) throw new Error(response.body)
  return response.json().data as { access_token: string, refresh_token: string }
}

function refresh (app: FastifyInstance, token: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('refresh rotates: a new pair, the presented token spent', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const first = await login(app, account)
      const rotated = await refresh(app, first.refresh_token)
      t.equal(rotated.statusCode, 200)
      const second = rotated.json().data
      t.not(second.refresh_token, first.refresh_token)
      t.not(second.access_token, first.access_token)
      t.equal(second.token_type, 'Bearer')
      t.equal((await app.inject(withToken(second.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200)
      t.equal((await refresh(app, second.refresh_token)).statusCode, 200, 'the new one rotates in turn')
    })

    t.test('reuse once the next token was spent revokes the whole session', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const first = await login(app, account)
      const second = (await refresh(app, first.refresh_token)).json().data
      const third = (await refresh(app, second.refresh_token)).json().data
      const reused = await refresh(app, first.refresh_token)
      t.equal(reused.statusCode, 401)
      t.equal(reused.json().error.code, 'TOKEN_REUSED')
      const descendant = await refresh(app, third.refresh_token)
      t.equal(descendant.statusCode, 401, 'the token issued after the spent one dies with the session')
      t.equal(descendant.json().error.code, 'TOKEN_REUSED')
      const other = await login(app, account)
      t.equal((await refresh(app, other.refresh_token)).statusCode, 200, 'other sessions are untouched')
      t.equal((await refresh(app, second.refresh_token)).json().error.code, 'TOKEN_REUSED', 'the last rotation is no longer retried either')
    })

    t.test('concurrent refreshes with one token: one rotation, every request answered its pair', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { refresh_token: token } = await login(app, account)
      const results = await Promise.all([refresh(app, token), refresh(app, token), refresh(app, token)])
      t.same(results.map((response) => response.statusCode), [200, 200, 200])
      t.equal(new Set(results.map((response) => response.body)).size, 1, 'never two pairs')
      t.equal((await app.database.db.selectFrom('refresh_tokens').select('jti').where('user_id', '=', account.id).execute()).length, 3, 'the sign-ins\' two and one successor')
      t.equal((await refresh(app, results[0]?.json().data.refresh_token)).statusCode, 200, 'a client racing itself stays signed in')
    })

    t.test('refresh refuses what is not a live refresh token', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const pair = await login(app, account)
      for (const [label, token] of [['an access token', pair.access_token], ['garbage', 'x.y.z']] as const) {
        const response = await refresh(app, token)
        t.equal(response.statusCode, 401, label)
        t.equal(response.json().error.code, 'INVALID_TOKEN', label)
      }
    })

    t.test('the roles claim is refreshed at the next refresh', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const pair = await login(app, account)
      await app.repositories.users.addRole(account.id, 'moderator')
      t.same(claimsOf(pair.access_token).roles, ['user'])
      const rotated = (await refresh(app, pair.refresh_token)).json().data
      t.same((claimsOf(rotated.access_token).roles as string[]).sort(), ['moderator', 'user'])
    })

    t.test('idle and absolute timeouts end the session', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const idle = await login(app, account)
      const old = new Date(Date.now() - 1801 * 1000).toISOString()
      await app.database.db.updateTable('sessions').set({ last_used_at: old }).where('user_id', '=', account.id).execute()
      const expired = await refresh(app, idle.refresh_token)
      t.equal(expired.statusCode, 401)
      t.equal(expired.json().error.code, 'SESSION_EXPIRED')

      const absolute = await login(app, account)
      const ancient = new Date(Date.now() - 28801 * 1000).toISOString()
      const session = await app.database.db.selectFrom('sessions').select('id').where('user_id', '=', account.id)
        .where('revoked_at', 'is', null).orderBy('created_at', 'desc').executeTakeFirstOrThrow()
      await app.database.db.updateTable('sessions').set({ created_at: ancient }).where('id', '=', session.id).execute()
      t.equal((await refresh(app, absolute.refresh_token)).json().error.code, 'SESSION_EXPIRED')
      t.equal((await refresh(app, absolute.refresh_token)).statusCode, 401, 'and stays ended')
    })

    t.test('a sign-in beyond SESSION_MAX_CONCURRENT ends the oldest session', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { SESSION_MAX_CONCURRENT: '2' } })
      const account = await createAccount(app) // the helper's own sign-in is session 1
      const second = await login(app, account, { id: 'phone' })
      const third = await login(app, account, { id: 'laptop' })
      const list = await app.inject(withToken(third.access_token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      t.equal(list.statusCode, 200)
      t.same(list.json().data.map((session: { device: { id: string } }) => session.device.id), ['phone', 'laptop'])
      t.equal(list.json().meta.total, 2)
      t.equal((await refresh(app, second.refresh_token)).statusCode, 200)
    })

    t.test('a sign-in reads the live sessions from the index of live sessions, not past the ended ones', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { SESSION_MAX_CONCURRENT: '1' } })
      const account = await createAccount(app)
      for (let n = 0; n < 3; n++) await login(app, account)
      const cutoff = new Date(0).toISOString()
      const plan = await queryPlan(app.database, 'sessions', liveSessionsOldestFirst(app.database.db, account.id, { idleBefore: cutoff, createdBefore: cutoff }))
      t.match(plan, /sessions_user_id_live/, plan)
      const live = await app.database.db.selectFrom('sessions').select('id').where('user_id', '=', account.id).where('revoked_at', 'is', null).execute()
      t.equal(live.length, 1, 'the limit held')
    })

    t.test('a sensitive change finds its session\'s step-up from the access token through the index of access tokens', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      for (let n = 0; n < 3; n++) await login(app, account)
      const plan = await queryPlan(app.database, 'refresh_tokens', stepUpOf(app.database.db, account.id, claimsOf(account.token).jti as string))
      t.match(plan, /refresh_tokens_access_jti/, plan)
    })

    t.test('GET and DELETE /auth/sessions', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const stranger = await createAccount(app)
      const pair = await login(app, account, { id: 'tablet', name: 'Tablet' })
      const listed = (await app.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/auth/sessions?sort=-created_at' }))).json()
      t.equal(listed.data.length, 2)
      const [newest] = listed.data
      t.same(Object.keys(newest).sort(), ['created_at', 'device', 'id', 'last_used_at'])
      t.same(newest.device, { id: 'tablet', name: 'Tablet' })
      t.notMatch(JSON.stringify(listed), /refresh_token|token_hash/)

      const strangers = await app.inject(withToken(stranger.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${newest.id as string}` }))
      t.equal(strangers.statusCode, 404, 'another user\'s session is not found')
      const ended = await app.inject(withToken(account.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${newest.id as string}` }))
      t.equal(ended.statusCode, 204)
      t.equal((await refresh(app, pair.refresh_token)).statusCode, 401, 'its refresh tokens stop working')
      const again = await app.inject(withToken(account.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${newest.id as string}` }))
      t.equal(again.statusCode, 404)
    })

    t.test('logout revokes the access token and ends its session', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const pair = await login(app, account)
      const out = await app.inject(withToken(pair.access_token, { method: 'POST', url: '/api/v1/auth/logout' }))
      t.equal(out.statusCode, 204)
      const after = await app.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(after.statusCode, 401)
      t.equal(after.json().error.code, 'INVALID_TOKEN')
      t.equal((await refresh(app, pair.refresh_token)).statusCode, 401, 'the session is over')
      t.equal((await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'other sessions live on')

      const [caller, other] = [await login(app, account), await login(app, account)]
      const byRefresh = await app.inject(withToken(caller.access_token, { method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: other.refresh_token } }))
      t.equal(byRefresh.statusCode, 204)
      t.equal((await refresh(app, other.refresh_token)).statusCode, 401, 'the given refresh token\'s session ends')
      t.equal((await app.inject(withToken(other.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401, 'and so does its access token')
      t.equal((await refresh(app, caller.refresh_token)).statusCode, 401, 'and so does the caller\'s own session')
      const row = await app.database.db.selectFrom('revoked_tokens').select(['jti', 'expires_at']).execute()
      t.equal(row.length, 3, 'the callers\' access tokens and the ended session\'s are on the revocation list')
    })

    t.test('an ended session lets none of its access tokens through', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const me = (token: string) => app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))

      const stolen = await login(app, account)
      const rotated = (await refresh(app, stolen.refresh_token)).json().data
      // The thief's second token is spent before the replay: no retry of the first then.
      const next = (await refresh(app, rotated.refresh_token)).json().data
      t.equal((await refresh(app, stolen.refresh_token)).json().error.code, 'TOKEN_REUSED', 'a replayed refresh token')
      t.equal((await me(rotated.access_token)).statusCode, 401, 'reuse: the access token issued by the rotation is revoked')
      t.equal((await me(stolen.access_token)).statusCode, 401, 'reuse: and the first one')
      t.equal((await me(next.access_token)).statusCode, 401, 'reuse: and the last one')

      const ended = await login(app, account, { id: 'tablet-1', name: 'Tablet' })
      const listed = await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      const tablet = (listed.json().data as Array<{ id: string, device: { id?: string } }>).find((session) => session.device.id === 'tablet-1')
      t.equal((await app.inject(withToken(account.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${tablet?.id ?? ''}` }))).statusCode, 204)
      t.equal((await me(ended.access_token)).json().error.code, 'INVALID_TOKEN', 'DELETE /auth/sessions/{id}: its access token is revoked')

      const before = await login(app, account)
      const changed = await app.inject(withToken(before.access_token, {
        method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { password: 'another-horse-battery', current_password: account.password }
      }))
      t.equal(changed.statusCode, 200)
      t.equal((await me(before.access_token)).statusCode, 401, 'a new password: every session\'s access tokens are revoked')
    })
  })
}
