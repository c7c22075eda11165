import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl, REDIS_ENV } from '../../helpers/database.js'

/** Suspending accounts through the API (docs/api.md, "Suspension"). */

const DAY_MS = 24 * 60 * 60 * 1000

async function login (app: FastifyInstance, account: Account, password = account.password) {
  return await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password } })
}

async function suspend (app: FastifyInstance, admin: Account, userId: string, body: object) {
  return await app.inject(withToken(admin.token, { method: 'POST', url: `/api/v1/users/${userId}/suspension`, payload: body }))
}

for (const backend of backends()) {
  t.test(`suspension (${backend.name})`, async (t) => {
    t.test('a suspended account cannot sign in, its sessions end and its tokens are refused on another instance within a second', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const first = await build(t, { databaseUrl, env: REDIS_ENV })
      const second = await build(t, { databaseUrl, env: REDIS_ENV })
      const admin = await createAccount(first, { roles: ['admin'] })
      const user = await createAccount(first)
      const signedIn = (await login(second, user)).json().data
      const until = new Date(Date.now() + DAY_MS).toISOString()

      const suspended = await suspend(first, admin, user.id, { reason: 'Spam reports', until })
      t.equal(suspended.statusCode, 200)
      t.match(suspended.json().data, { user_id: user.id, reason: 'Spam reports', until, suspended_by: admin.id })

      const refresh = await second.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: signedIn.refresh_token } })
      t.equal(refresh.statusCode, 401, 'the refresh on the other instance is refused at once')
      const elapsed = await msUntil(async () =>
        (await second.inject(withToken(signedIn.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode === 401, 2000)
      t.ok(elapsed <= 1000, `its access token refused by the other instance after ${elapsed} ms`)

      const refused = await login(second, user)
      t.equal(refused.statusCode, 403)
      t.same(refused.json().error.code, 'ACCOUNT_SUSPENDED')
      t.equal(refused.json().error.message, `This account is suspended until ${until}`, 'with the end date')
      const guessed = await login(second, user, 'not-the-password-1')
      t.equal(guessed.statusCode, 401, 'a wrong password learns nothing of the suspension')
      t.equal(guessed.json().error.code, 'INVALID_CREDENTIALS')

      const events = await first.database.db.selectFrom('audit_logs').select(['event', 'details']).where('target_id', '=', user.id)
        .where('event', 'in', ['user.suspended', 'auth.login_failed']).orderBy('created_at').execute()
      t.match(events.map((row) => ({ event: row.event, details: JSON.parse(row.details) })), [
        { event: 'user.suspended', details: { reason: 'Spam reports', until } },
        { event: 'auth.login_failed', details: { reason: 'suspended' } },
        { event: 'auth.login_failed', details: { reason: 'wrong_password' } }
      ])

      const lifted = await first.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${user.id}/suspension` }))
      t.equal(lifted.statusCode, 204)
      t.equal((await login(second, user)).statusCode, 200, 'signs in once lifted')
    })

    t.test('a suspension ends by itself at its end', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      t.equal((await suspend(app, admin, user.id, { reason: 'Cooling off', until: new Date(Date.now() + 1500).toISOString() })).statusCode, 200)
      t.equal((await login(app, user)).statusCode, 403)
      const elapsed = await msUntil(async () => (await login(app, user)).statusCode === 200, 5000)
      t.ok(elapsed < 5000, 'signs in again once it has passed')
    })

    t.test('who may suspend whom', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'] })
      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const user = await createAccount(app)
      const moderator = await createAccount(app, { roles: ['moderator'] })
      t.equal((await suspend(app, user, moderator.id, { reason: 'x' })).statusCode, 403, 'a user may not')
      t.equal((await suspend(app, moderator, user.id, { reason: 'x' })).statusCode, 403, 'nor a moderator')
      const outranked = await suspend(app, admin, superAdmin.id, { reason: 'x' })
      t.equal(outranked.statusCode, 403, 'an admin may not suspend a super_admin')
      t.equal((await login(app, superAdmin)).statusCode, 200)
      t.equal((await suspend(app, admin, admin.id, { reason: 'x' })).statusCode, 409, 'nor oneself')
      t.equal((await suspend(app, admin, user.id, { reason: 'x', until: new Date(Date.now() - 1000).toISOString() })).statusCode, 409, 'nor into the past')
      t.equal((await suspend(app, admin, '01890000-0000-7000-8000-000000000000', { reason: 'x' })).statusCode, 404)
      t.equal((await suspend(app, admin, user.id, { reason: '' })).statusCode, 400, 'a reason is required')
      const indefinite = await suspend(app, superAdmin, user.id, { reason: 'Chargebacks' })
      t.match(indefinite.json().data, { until: null })
      t.equal((await login(app, user)).json().error.message, 'This account is suspended until an administrator lifts it')
    })
  })
}
