import t from 'tap'
import { type Account, createAccount, enableTotp, withToken } from '../../helpers/accounts.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'

/** Acting as a user from their page in the console (docs/console.md, "Impersonation"). */

const REASON = 'Ticket 4711: the user cannot find their sessions'

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    /** A super_admin signed in to the console with their authenticator app: the session impersonation asks for. */
    async function operatorWithMfa () {
      const operator = await createAccount(app, { roles: ['super_admin'] })
      const { code } = await enableTotp(app, operator)
      const { browser } = await signedInBrowser(issuer, operator, '/console/sign-in', () => code(1))
      return { operator, browser }
    }

    async function userPage (browser: Awaited<ReturnType<typeof operatorWithMfa>>['browser'], user: Account) {
      const { response } = await browser.follow(`/console/users/${user.id}`)
      return await response.text()
    }

    /** The audit log's entries of `event` about `targetId`. */
    async function audited (event: string, targetId: string) {
      const found = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/audit-logs?event=${event}&limit=100` }))
      const entries: Array<{ actor_id: string, target_id: string, details: unknown }> = found.json().data
      return entries.filter((entry) => entry.target_id === targetId)
    }

    t.test('an operator acts as a user: their account page, the sensitive changes refused, then back', async (t) => {
      const { operator, browser } = await operatorWithMfa()
      const user = await createAccount(app, { name: 'Ada Lovelace' })
      const page = await userPage(browser, user)
      t.match(page, 'Act as this user')

      const acting = await browser.follow(`/console/users/${user.id}/impersonation`, { form: { _csrf: pageToken(page), reason: REASON } })
      t.equal(new URL(acting.url).pathname, '/account', 'on the user\'s own page')
      const html = await acting.response.text()
      t.match(html, '<span role="status" class="acting">Acting as Ada Lovelace</span>', 'the header says whose eyes these are')
      t.match(html, 'Stop acting')
      t.notMatch(html, '>Sign out<', 'the operator\'s sign-out waits until the acting ends')
      t.match(await audited('user.impersonated', user.id), [{ actor_id: operator.id, details: { reason: REASON } }], 'audited with its reason')

      const address = await browser.request('/account/email', { form: { _csrf: pageToken(html), email: 'taken-over@example.com', current_password: user.password } })
      t.equal(address.status, 403, 'a sensitive change is the person\'s own, even with their password')
      t.match(await address.text(), 'Not allowed while impersonating')
      const me = await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.json().data.email, user.email, 'the address is unchanged')

      const forged = await browser.request('/console/impersonation/end', { form: { _csrf: 'x'.repeat(60) } })
      t.equal(forged.status, 403, 'stopping takes the page\'s token too')
      t.match(await (await browser.follow('/account')).response.text(), 'Stop acting', 'still acting')
      const stopped = await browser.follow('/console/impersonation/end', { form: { _csrf: pageToken(html) } })
      t.equal(new URL(stopped.url).pathname, `/console/users/${user.id}`, 'back on the user\'s page')
      const back = await stopped.response.text()
      t.match(back, 'Signed in as Test User', 'as the operator again')
      t.match(await audited('auth.logout', user.id), [{}], 'the impersonation\'s token ended, as a sign-out with it')
    })

    t.test('a cookie copied while acting is worth nothing once the operator signs out', async (t) => {
      const { browser } = await operatorWithMfa()
      const user = await createAccount(app)
      const acting = await browser.follow(`/console/users/${user.id}/impersonation`, { form: { _csrf: pageToken(await userPage(browser, user)), reason: REASON } })
      const html = await acting.response.text()
      const thief = browser.copy()
      const otherThief = browser.copy()

      const signedOut = await browser.follow('/console/sign-out', { form: { _csrf: pageToken(html) } })
      t.match(signedOut.url, '/oidc/session/end', 'the impersonation ended, then the operator\'s session, with one form')
      const replayed = await thief.follow('/account')
      t.match(new URL(replayed.url).pathname, /^\/oidc\/interaction\//, 'the copy is sent to sign in')
      t.match(await replayed.response.text(), 'name="password"')
      const console = await otherThief.follow('/console/users')
      t.match(new URL(console.url).pathname, /^\/oidc\/interaction\//, 'nor does it open the console')
    })

    t.test('ending the operator\'s own session ends the acting too', async (t) => {
      const { operator, browser } = await operatorWithMfa()
      const user = await createAccount(app)
      const acting = await browser.follow(`/console/users/${user.id}/impersonation`, { form: { _csrf: pageToken(await userPage(browser, user)), reason: REASON } })
      t.match(await acting.response.text(), 'Stop acting')
      const listed = await app.inject(withToken(operator.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      const consoleSession = (listed.json().data as Array<{ id: string, device: { name?: string } }>).find((session) => session.device.name === 'Console')
      t.ok(consoleSession, 'the console\'s session, among the operator\'s')
      const ended = await app.inject(withToken(operator.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${consoleSession?.id ?? ''}` }))
      t.equal(ended.statusCode, 204)
      const next = await browser.follow('/account')
      t.match(new URL(next.url).pathname, /^\/oidc\/interaction\//, 'the next page signs out, whoever it was acting as')
    })

    t.test('refused: a session without a second factor, a missing form token, an operator acting as one above them', async (t) => {
      const user = await createAccount(app)
      const passwordOnly = await createAccount(app, { roles: ['super_admin'] })
      const { browser } = await signedInBrowser(issuer, passwordOnly)
      const page = await userPage(browser, user)
      const refused = await browser.request(`/console/users/${user.id}/impersonation`, { form: { _csrf: pageToken(page), reason: REASON } })
      t.equal(refused.status, 403)
      t.match(await refused.text(), 'second factor')
      t.match(await (await browser.follow('/account')).response.text(), 'Signed in as Test User', 'still the operator')

      const { browser: withMfa } = await operatorWithMfa()
      const { browser: otherSession } = await operatorWithMfa()
      const othersToken = pageToken(await userPage(otherSession, user))
      for (const [token, what] of [[undefined, 'no form token'], ['x'.repeat(60), 'a made-up token'], [othersToken, 'another session\'s token']] as const) {
        const form: Record<string, string> = token === undefined ? { reason: REASON } : { _csrf: token, reason: REASON }
        t.equal((await withMfa.request(`/console/users/${user.id}/impersonation`, { form })).status, 403, `${what}: no impersonation`)
      }
      const peer = await createAccount(app, { roles: ['super_admin'] })
      const upward = await withMfa.request(`/console/users/${peer.id}/impersonation`, { form: { _csrf: pageToken(await userPage(withMfa, peer)), reason: REASON } })
      t.equal(upward.status, 403, 'a super_admin is impersonated by nobody')
      t.same(await audited('user.impersonated', user.id), [], 'nothing started')
      t.same(await audited('user.impersonated', peer.id), [])

      const admin = await createAccount(app, { roles: ['admin'] })
      const { browser: adminBrowser } = await signedInBrowser(issuer, admin)
      t.notMatch(await userPage(adminBrowser, user), 'Act as this user', 'an admin without impersonate_users is not offered it')
    })
  })
}
