import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { type Account, claimsOf, createAccount, enableTotp, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends } from '../../helpers/database.js'

/** Acting as a user through the API (docs/api.md, "Impersonation"). */

const REASON = 'Ticket 4521: the user cannot see their invoices'

/** A super_admin with TOTP on, signed in through the MFA challenge: its token's amr holds `mfa`. */
async function superAdminWithMfa (app: FastifyInstance): Promise<Account & { backupCodes: string[] }> {
  const account = await createAccount(app, { roles: ['super_admin'] })
  const { code, backupCodes } = await enableTotp(app, account)
  return { ...await signedInWithMfa(app, account, code(1)), backupCodes }
}

/** Another session of `account`, its second factor answered with `code` (a TOTP or backup code). */
async function signedInWithMfa (app: FastifyInstance, account: Account, code: string): Promise<Account> {
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
  const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: login.json().data.mfa_token, code } })
  if (verified.statusCode !== 200) throw new Error(verified.body)
  return { ...account, token: verified.json().data.access_token }
}

async function impersonate (app: FastifyInstance, admin: Account, userId: string, reason = REASON) {
  return await app.inject(withToken(admin.token, { method: 'POST', url: `/api/v1/users/${userId}/impersonation`, payload: { reason } }))
}

/** The impersonation's access token: `user` as the administrator acts through it. */
async function actingAs (app: FastifyInstance, admin: Account, user: Account): Promise<Account> {
  const answer = await impersonate(app, admin, user.id)
  if (answer.statusCode !== 201) throw new Error(answer.body)
  return { ...user, token: answer.json().data.access_token }
}

for (const backend of backends()) {
  t.test(`impersonation (${backend.name})`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const admin = await superAdminWithMfa(app)

    t.test('a super_admin signed in with a second factor acts as a user: `act` names them, every request is audited with both ids, the user is told afterwards', async (t) => {
      const user = await createAccount(app)
      const answer = await impersonate(app, admin, user.id)
      t.equal(answer.statusCode, 201)
      const { data } = answer.json()
      t.equal(data.token_type, 'Bearer')
      t.equal(data.expires_in, 900, 'one access token\'s life, 15 minutes')
      t.notOk('refresh_token' in data, 'nothing to extend it with')
      t.match(data.impersonation, { user_id: user.id, impersonator_id: admin.id, reason: REASON })
      t.equal(Date.parse(data.impersonation.expires_at) - Date.parse(data.impersonation.created_at), 900_000)
      t.match(claimsOf(data.access_token), { sub: user.id, act: { sub: admin.id }, amr: [] })

      const impersonated = { ...user, token: data.access_token }
      const me = await app.inject(withToken(impersonated.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 200)
      t.equal(me.json().data.id, user.id, 'the administrator sees what the user sees')
      const renamed = await app.inject(withToken(impersonated.token, { method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { name: 'Renamed By Support' } }))
      t.equal(renamed.statusCode, 200, 'a change that is not a sensitive one is made')

      await app.auditTrail.flush()
      const { db } = app.database
      const entries = await db.selectFrom('audit_logs').selectAll().where((eb) => eb.or([eb('target_id', '=', user.id), eb('actor_id', '=', admin.id)])).execute()
      const started = entries.find((entry) => entry.event === 'user.impersonated')
      t.match(started, { actor_id: admin.id, target_id: user.id })
      t.match(JSON.parse(started?.details ?? '{}'), { reason: REASON, impersonation_id: data.impersonation.id })
      const requests = entries.filter((entry) => entry.event === 'impersonation.request').map((entry) => ({ ...entry, details: JSON.parse(entry.details) }))
      const seen = requests.map(({ actor_id: actor, target_id: target, details }) =>
        [actor, target, details.method, details.route, details.status])
      t.same(seen.sort(), [
        [admin.id, user.id, 'GET', '/api/v1/auth/me', 200],
        [admin.id, user.id, 'PATCH', '/api/v1/users/:id', 200]
      ], 'each request, with the administrator as actor and the user as target')
      const updated = entries.find((entry) => entry.event === 'user.updated')
      t.match(updated, { actor_id: user.id, target_id: user.id })
      t.equal(JSON.parse(updated?.details ?? '{}').impersonator_id, admin.id, 'the change names the administrator too')

      const notice = await db.selectFrom('outbox').selectAll().where('recipient', '=', user.email).where('subject', 'like', 'An administrator used your account%').executeTakeFirst()
      t.ok(notice, 'a notice to the user is stored with the impersonation')
      t.equal(notice?.next_attempt_at, data.impersonation.expires_at, 'sent once it has ended')
      t.match(notice?.text_body, REASON)
    })

    t.test('refused: without the permission, without a second factor, onto a super_admin or oneself, an unknown or suspended account', async (t) => {
      const user = await createAccount(app)
      const otherAdmin = await createAccount(app, { roles: ['admin'] })
      const withoutMfa = await createAccount(app, { roles: ['super_admin'] })
      const otherSuperAdmin = await createAccount(app, { roles: ['super_admin'] })

      const byAdmin = await impersonate(app, otherAdmin, user.id)
      t.equal(byAdmin.statusCode, 403, 'admin does not hold impersonate_users')
      t.equal(byAdmin.json().error.code, 'FORBIDDEN')
      const byPassword = await impersonate(app, withoutMfa, user.id)
      t.equal(byPassword.statusCode, 403)
      t.equal(byPassword.json().error.code, 'MFA_REQUIRED', 'a session proved by a password alone')
      const ontoSuperAdmin = await impersonate(app, admin, otherSuperAdmin.id)
      t.equal(ontoSuperAdmin.statusCode, 403, 'never a super_admin')
      t.equal((await impersonate(app, admin, admin.id)).statusCode, 409, 'never oneself')
      t.equal((await impersonate(app, admin, '01900000-0000-7000-8000-000000000000')).statusCode, 404)
      const tooShort = await impersonate(app, admin, user.id, 'x')
      t.equal(tooShort.statusCode, 400, 'a reason is required')

      const suspended = await app.inject(withToken(admin.token, { method: 'POST', url: `/api/v1/users/${user.id}/suspension`, payload: { reason: 'Spam' } }))
      t.equal(suspended.statusCode, 200)
      const ontoSuspended = await impersonate(app, admin, user.id)
      t.equal(ontoSuspended.statusCode, 403)
      t.equal(ontoSuspended.json().error.code, 'ACCOUNT_SUSPENDED')
    })

    t.test('inside an impersonation, the sensitive changes, a step-up and impersonating again are refused', async (t) => {
      const user = await createAccount(app)
      const other = await createAccount(app)
      const acting = await actingAs(app, admin, user)
      const restricted = async (request: { method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object }, what: string) => {
        const answer = await app.inject(withToken(acting.token, request))
        t.equal(answer.statusCode, 403, what)
        t.equal(answer.json().error.code, 'IMPERSONATION_RESTRICTED', what)
      }
      await restricted({ method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { email: 'taken-over@example.com', current_password: user.password } }, 'a new address')
      await restricted({ method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { password: 'a-new-password-1', current_password: user.password } }, 'a new password')
      await restricted({ method: 'POST', url: '/api/v1/auth/reauthenticate', payload: { password: user.password } }, 'a step-up')
      // TOTP's set-up is refused as its enabling is: it shows the secret and replaces one pending.
      await restricted({ method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }, 'a second factor\'s set-up')
      // A secret pending as the person's own set-up would leave it.
      const { secret } = await app.services.mfa.setup({ id: user.id, email: user.email })
      await restricted({ method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret }) } }, 'a second factor')
      await restricted({ method: 'DELETE', url: '/api/v1/users/me', payload: { current_password: user.password } }, 'deleting the account')
      const exported = await app.inject(withToken(acting.token, { method: 'GET', url: '/api/v1/users/me/export' }))
      t.equal(exported.statusCode, 403, 'exporting the account')
      t.equal(exported.json().error.code, 'IMPERSONATION_RESTRICTED')
      const again = await impersonate(app, acting, other.id)
      t.equal(again.statusCode, 403, 'impersonating again')
      const after = await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(after.json().data.email, user.email, 'nothing changed')
    })

    t.test('inside an impersonation, the person\'s sessions are not ended: by id, or by logging out with their refresh token', async (t) => {
      const user = await createAccount(app)
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      const { refresh_token: refreshToken } = login.json().data as { refresh_token: string }
      const impersonated = await actingAs(app, admin, user)
      const listed = await app.inject(withToken(impersonated.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      const sessions = listed.json().data as Array<{ id: string }>
      t.ok(sessions.length >= 2, 'the administrator sees the person\'s sessions')
      for (const session of sessions) {
        const ended = await app.inject(withToken(impersonated.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${session.id}` }))
        t.equal(ended.statusCode, 403)
        t.equal(ended.json().error.code, 'IMPERSONATION_RESTRICTED')
      }
      const logout = await app.inject(withToken(impersonated.token, { method: 'POST', url: '/api/v1/auth/logout', payload: { refresh_token: refreshToken } }))
      t.equal(logout.statusCode, 403, 'naming the person\'s refresh token')
      t.equal(logout.json().error.code, 'IMPERSONATION_RESTRICTED')
      const own = await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      t.equal(own.json().data.length, sessions.length, 'every session of the person still lives')
      const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } })
      t.equal(refreshed.statusCode, 200, 'their refresh token still works')
      const ended = await app.inject(withToken(impersonated.token, { method: 'POST', url: '/api/v1/auth/logout' }))
      t.equal(ended.statusCode, 204, 'the impersonation ends its own token')
      t.equal((await app.inject(withToken(impersonated.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401)
    })

    t.test('the token ends with the user\'s sessions, and with the administrator\'s permission', async (t) => {
      const user = await createAccount(app)
      const first = await actingAs(app, admin, user)
      const changed = await app.inject(withToken(user.token, { method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { password: 'another-password-2', current_password: user.password } }))
      t.equal(changed.statusCode, 200)
      const me = async (token: string) => (await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode
      t.equal(await me(first.token), 401, 'a new password ends it with every session')

      const deputy = await superAdminWithMfa(app)
      const second = await actingAs(app, deputy, user)
      t.equal(await me(second.token), 200)
      await app.repositories.users.removeRole(deputy.id, 'super_admin')
      t.ok(await msUntil(async () => await me(second.token) === 401, 2000) < 2000, 'refused once the administrator lost the permission')
    })

    t.test('the token ends with the administrator\'s session it was started from; a token no session issued starts none', async (t) => {
      const user = await createAccount(app)
      const me = async (token: string) => (await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode
      const operator = await superAdminWithMfa(app)
      const acting = await actingAs(app, operator, user)
      const otherSession = await signedInWithMfa(app, operator, operator.backupCodes[0] ?? '')
      const actingFromOther = await actingAs(app, otherSession, user)
      const loggedOut = await app.inject(withToken(operator.token, { method: 'POST', url: '/api/v1/auth/logout', payload: {} }))
      t.equal(loggedOut.statusCode, 204)
      t.equal(await me(acting.token), 401, 'the administrator signed out: the impersonation is over')
      t.equal(await me(actingFromOther.token), 200, 'one begun from another of their sessions goes on')

      const listed = await app.inject(withToken(otherSession.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      const session = (listed.json().data as Array<{ id: string }>).at(-1) // the newest: the one just signed in
      const byThemselves = await app.inject(withToken(otherSession.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${session?.id ?? ''}` }))
      t.equal(byThemselves.statusCode, 204)
      t.equal(await me(actingFromOther.token), 401, 'that session ended by id: its impersonation too')

      // A session ended whose revocation has not reached this instance yet (another instance ended
      // it): its token still authenticates here, but starts no impersonation.
      const third = await signedInWithMfa(app, operator, operator.backupCodes[1] ?? '')
      const thirdSession = (await app.inject(withToken(third.token, { method: 'GET', url: '/api/v1/auth/sessions' }))).json().data.at(-1).id as string
      const now = new Date().toISOString()
      await app.repositories.sessions.revoke([thirdSession], 'logout', now, now)
      t.equal(await me(third.token), 200, 'the token is not yet known here as revoked')
      const late = await impersonate(app, third, user.id)
      t.equal(late.statusCode, 401, 'its session ended: no impersonation begins')
      const begun = await app.database.db.selectFrom('impersonations').select('id').where('impersonator_session_id', '=', thirdSession).execute()
      t.same(begun, [], 'none stored')

      // Signed with the service's key and proved with a second factor, but issued by no session.
      const minted = app.tokens.issueAccessToken({ sub: operator.id, roles: ['super_admin'], amr: ['pwd', 'otp', 'mfa'], auth_time: Math.floor(Date.now() / 1000) })
      const unbound = await impersonate(app, { ...operator, token: minted.token }, user.id)
      t.equal(unbound.statusCode, 403, 'nothing would end it')
      t.match(unbound.json().error.message, 'session')
    })
  })
}
