import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, enableTotp, signIn, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl, REDIS_ENV } from '../../helpers/database.js'
import { MailServer } from '../../helpers/servers/mail-server.js'

/** An operator's help with a user's sign-in through the API (docs/api.md, "Account support"). */

async function as (app: FastifyInstance, caller: Account, method: 'GET' | 'DELETE', url: string) {
  return await app.inject(withToken(caller.token, { method, url: `/api/v1/users/${url}` }))
}

async function audited (app: FastifyInstance, event: string, userId: string) {
  return await app.database.db.selectFrom('audit_logs').select(['actor_id', 'details']).where('event', '=', event).where('target_id', '=', userId).execute()
}

for (const backend of backends()) {
  t.test(`account support (${backend.name})`, async (t) => {
    t.test('an administrator lists a user\'s sessions and ends one: its tokens are refused on another instance within a second', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const first = await build(t, { databaseUrl, env: REDIS_ENV })
      const second = await build(t, { databaseUrl, env: REDIS_ENV })
      const admin = await createAccount(first, { roles: ['admin'] })
      const user = await createAccount(first)
      const other = await signIn(second, user)

      const listed = await as(first, admin, 'GET', `${user.id}/sessions?sort=created_at`)
      t.equal(listed.statusCode, 200)
      const sessions = listed.json().data as Array<{ id: string }>
      t.equal(sessions.length, 2, 'both of the user\'s sessions')
      const target = sessions[1]?.id ?? ''

      t.equal((await as(first, admin, 'DELETE', `${user.id}/sessions/${target}`)).statusCode, 204)
      const refresh = await second.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: other.refresh_token } })
      t.equal(refresh.statusCode, 401, 'its refresh token is refused at once')
      const elapsed = await msUntil(async () =>
        (await second.inject(withToken(other.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode === 401, 2000)
      t.ok(elapsed <= 1000, `its access token refused by the other instance after ${elapsed} ms`)
      t.equal((await first.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'the other session goes on')
      t.match(await audited(first, 'session.ended', user.id), [{ actor_id: admin.id, details: JSON.stringify({ id: target }) }])

      t.equal((await as(first, admin, 'DELETE', `${user.id}/sessions/${target}`)).statusCode, 404, 'an ended session is not found')
      const adminSession = (await as(first, admin, 'GET', `${admin.id}/sessions`)).json().data[0].id as string
      t.equal((await as(first, admin, 'DELETE', `${user.id}/sessions/${adminSession}`)).statusCode, 404, 'nor another account\'s session under this one')
      t.equal((await as(first, admin, 'GET', `${admin.id}/sessions`)).statusCode, 200, 'which goes on')
    })

    t.test('the rank rule: nobody looks into or changes the sign-in of an account holding a permission they lack', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'] })
      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const user = await createAccount(app)
      const another = await createAccount(app)
      const superSession = (await as(app, superAdmin, 'GET', `${superAdmin.id}/sessions`)).json().data[0].id as string
      const userSession = (await as(app, user, 'GET', `${user.id}/sessions`)).json().data[0].id as string

      for (const [caller, target, session, who] of [
        [admin, superAdmin, superSession, 'an admin, a super_admin\'s'],
        [moderator, user, userSession, 'a moderator, a user\'s'],
        [another, user, userSession, 'a user, another user\'s']
      ] as const) {
        t.equal((await as(app, caller, 'GET', `${target.id}/sessions`)).statusCode, 403, `${who} sessions`)
        t.equal((await as(app, caller, 'GET', `${target.id}/sign-in-methods`)).statusCode, 403, `${who} sign-in methods`)
        t.equal((await as(app, caller, 'DELETE', `${target.id}/sessions/${session}`)).statusCode, 403, `${who} session's end`)
        t.equal((await as(app, caller, 'DELETE', `${target.id}/mfa`)).statusCode, 403, `${who} second factors`)
      }
      t.equal((await as(app, superAdmin, 'GET', `${superAdmin.id}/sessions`)).statusCode, 200, 'the super_admin is still signed in')
      t.equal((await as(app, admin, 'GET', '00000000-0000-7000-8000-000000000000/sign-in-methods')).statusCode, 404, 'an unknown user')

      t.equal((await as(app, user, 'GET', `${user.id}/sign-in-methods`)).statusCode, 200, 'one reads one\'s own')
      t.equal((await as(app, user, 'DELETE', `${user.id}/mfa`)).statusCode, 403, 'but no reset of one\'s own second factors')
      const own = await as(app, admin, 'DELETE', `${admin.id}/mfa`)
      t.equal(own.statusCode, 409, 'an administrator\'s own go only with their own proof')
      t.match(own.json().error.message, /DELETE \/api\/v1\/auth\/mfa\/totp/)
      t.equal((await as(app, user, 'DELETE', `${user.id}/sessions/${userSession}`)).statusCode, 204, 'one ends one\'s own session')
      t.equal((await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401)
    })

    t.test('a reset changes how an account signs in: the operator\'s proof, and never through an API key', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'], reauthenticated: false })
      const user = await createAccount(app)
      await enableTotp(app, user)
      const reset = async (token: string, payload?: object) =>
        await app.inject(withToken(token, { method: 'DELETE', url: `/api/v1/users/${user.id}/mfa`, ...(payload !== undefined && { payload }) }))
      const bare = await reset(admin.token)
      t.equal(bare.statusCode, 403, 'an access token alone: refused')
      t.equal(bare.json().error.code, 'REAUTHENTICATION_REQUIRED')
      const keyed = await app.inject(withToken(admin.token, {
        method: 'POST', url: '/api/v1/api-keys', payload: { name: 'Ops', scopes: ['manage_users', 'read', 'write', 'delete'], current_password: admin.password }
      }))
      t.equal(keyed.statusCode, 201)
      const byKey = await reset(keyed.json().data.key as string, { current_password: admin.password })
      t.equal(byKey.statusCode, 403, 'an API key: refused, even with the password')
      t.match((await as(app, user, 'GET', `${user.id}/sign-in-methods`)).json().data, { second_factors: ['totp'] }, 'nothing reset')
      t.equal((await reset(admin.token, { current_password: 'not-the-password-1' })).statusCode, 400, 'a wrong password: refused, as on every proof')
      t.equal((await reset(admin.token, { current_password: admin.password })).statusCode, 204, 'the operator\'s password: reset')
    })

    t.test('an administrator sees how an account signs in, never a secret, and resets its second factors', async (t) => {
      const smtp = await new MailServer().start()
      t.teardown(async () => { await smtp.stop() })
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const { code, backupCodes } = await enableTotp(app, user)
      const backupCode = backupCodes[0] ?? ''
      const signedIn = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: signedIn.json().data.mfa_token, code: backupCode } })
      t.equal(verified.statusCode, 200)

      const methods = await as(app, admin, 'GET', `${user.id}/sign-in-methods`)
      t.equal(methods.statusCode, 200)
      t.same(methods.json().data, {
        first_factors: ['password'], second_factors: ['totp'], backup_codes_left: 9, identity_providers: []
      }, 'these fields and no other: no secret, code or credential')

      const pending = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      t.equal((await as(app, admin, 'DELETE', `${user.id}/mfa`)).statusCode, 204)
      t.match((await as(app, admin, 'GET', `${user.id}/sign-in-methods`)).json().data, { second_factors: [], backup_codes_left: 0 })
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      t.ok(typeof login.json().data.access_token === 'string', 'the password alone signs in again')
      t.equal((await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'the sessions stay')
      t.match(await audited(app, 'mfa.reset', user.id), [{ actor_id: admin.id, details: JSON.stringify({ methods: ['totp'] }) }])
      const notice = await smtp.next((mail) => mail.to.includes(user.email) && mail.subject.includes('disabled'))
      t.equal(notice.subject, 'Two-factor authentication was disabled on your account', 'the holder is told')
      const late = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: pending.json().data.mfa_token, code: code(1) } })
      t.equal(late.statusCode, 401, 'a challenge begun before the reset is not answered by the old secret')

      t.equal((await as(app, admin, 'DELETE', `${user.id}/mfa`)).statusCode, 204, 'an account with none is left as it is')
      t.equal((await audited(app, 'mfa.reset', user.id)).length, 1, 'and nothing is audited')
    })
  })
}
