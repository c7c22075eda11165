import t from 'tap'
import { createAccount, type Account } from '../../helpers/accounts.js'
import { authorizeWithPassword, startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    /** A browser signed in to the console as `account` (by the authorization server's pages), at the users screen. */
    async function signedIn (account: Account) {
      const { browser, landed, response, html } = await signedInBrowser(issuer, account)
      return { browser, landed, users: { response }, html }
    }

    t.test('an operator signs in through the authorization server\'s pages, finds a user, suspends and un-suspends them', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'], name: 'Ada Operator' })
      const target = await createAccount(app, { name: 'Zelda Findme' })
      const { browser, landed, users, html } = await signedIn(admin)
      t.equal(landed, `${issuer}/console/users`, 'back on the users screen')
      t.equal(users.response.status, 200)
      t.match(users.response.headers.get('content-security-policy'), /default-src 'none'.*frame-ancestors 'none'/, 'the console\'s strict CSP')
      t.notMatch(users.response.headers.get('content-security-policy'), /unsafe-inline/)
      t.match(html, 'Signed in as Ada Operator')

      const sessions = await app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers: { authorization: `Bearer ${admin.token}` } })
      t.ok(sessions.json().data.some((session: { device: { name?: string } }) => session.device.name === 'Console'), 'the console\'s session is listed like any')
      const grants = await app.inject({ method: 'GET', url: '/api/v1/auth/grants', headers: { authorization: `Bearer ${admin.token}` } })
      t.same(grants.json().data, [], 'the console is no connected application')

      const found = await browser.follow('/console/users?search=Zelda%20Findme')
      const listing = await found.response.text()
      t.match(listing, `/console/users/${target.id}`, 'search finds the user')
      const byAddress = await (await browser.follow(`/console/users?search=${encodeURIComponent(target.email.toUpperCase())}`)).response.text()
      t.match(byAddress, `/console/users/${target.id}`, 'so does its address, in any spelling')
      t.equal(byAddress.match(/<tr><td>/g)?.length, 1, 'and only it')
      const page = await browser.follow(`/console/users/${target.id}`)
      const userHtml = await page.response.text()
      t.match(userHtml, 'Active')
      const suspended = await browser.follow(`/console/users/${target.id}/suspension`, { form: { _csrf: pageToken(userHtml), reason: 'Chargeback fraud', until: '' } })
      t.match(await suspended.response.text(), 'The account is suspended')
      const refused = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: target.email, password: target.password } })
      t.equal(refused.json().error.code, 'ACCOUNT_SUSPENDED', 'the service\'s suspension, in force')
      const again = await browser.follow(`/console/users/${target.id}`)
      const againHtml = await again.response.text()
      const lifted = await browser.follow(`/console/users/${target.id}/suspension/lift`, { form: { _csrf: pageToken(againHtml) } })
      t.match(await lifted.response.text(), 'The suspension is lifted')
      const audit = await app.inject({ method: 'GET', url: `/api/v1/audit-logs?actor_id=${admin.id}&event=user.suspended`, headers: { authorization: `Bearer ${server.admin.token}` } })
      t.match(audit.json().data, [{ target_id: target.id }], 'audited as the API\'s suspension is, the operator its actor')
    })

    t.test('the built-in client takes no request but the console\'s own: a fresh sign-in, its code in the query', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const { browser } = await signedIn(admin)
      const base = { client_id: 'console', redirect_uri: `${issuer}/console/callback`, response_type: 'code', scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256', state: 'attacker' }
      const requests: Array<Record<string, string>> = [{ prompt: 'none' }, {}, { prompt: 'login', response_mode: 'fragment' }]
      for (const extra of requests) {
        const answer = await browser.request(`/oidc/auth?${new URLSearchParams({ ...base, ...extra }).toString()}`)
        t.equal(answer.status, 400, `refused: ${JSON.stringify(extra)}`)
        t.notMatch(answer.headers.get('location') ?? '', 'code=', 'no code handed out')
      }
    })

    t.test('a sign-in started again while signed in opens no second session', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const { browser } = await signedIn(admin)
      const again = await browser.request('/console/sign-in')
      t.equal(again.status, 303)
      t.equal(again.headers.get('location'), '/console/users')
      const sessions = await app.inject({ method: 'GET', url: '/api/v1/auth/sessions', headers: { authorization: `Bearer ${admin.token}` } })
      t.equal(sessions.json().data.filter((session: { device: { name?: string } }) => session.device.name === 'Console').length, 1)
    })

    t.test('forms refuse a missing, a wrong and another session\'s token', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const target = await createAccount(app)
      const first = await signedIn(admin)
      const second = await signedIn(admin)
      const secondPage = await (await second.browser.follow(`/console/users/${target.id}`)).response.text()
      const url = `/console/users/${target.id}/suspension`
      for (const [why, form] of [
        ['missing', { reason: 'x' }],
        ['wrong', { _csrf: 'forged', reason: 'x' }],
        ['another session\'s', { _csrf: pageToken(secondPage), reason: 'x' }]
      ] as const) {
        const answer = await first.browser.request(url, { form })
        t.equal(answer.status, 403, `${why} token: refused`)
        t.match(await answer.text(), 'This form has expired')
      }
      // The same browser (one form secret), signed out and in again: the first session's token is not the second's.
      const firstPage = await (await first.browser.follow(`/console/users/${target.id}`)).response.text()
      await first.browser.request('/console/sign-out', { form: { _csrf: pageToken(firstPage) } })
      await authorizeWithPassword(first.browser, '/console/sign-in', admin)
      const stale = await first.browser.request(url, { form: { _csrf: pageToken(firstPage), reason: 'x' } })
      t.equal(stale.status, 403, 'the same browser\'s earlier session\'s token: refused')
      const state = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: target.email, password: target.password } })
      t.equal(state.statusCode, 200, 'nothing was suspended')
    })

    t.test('a search\'s pages: 25 at a time, the next page by its cursor, and back to the first', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const named = new Set<string>()
      for (let index = 0; index < 27; index++) named.add((await createAccount(app, { name: `Pagewise Person ${index}` })).id)
      const { browser } = await signedIn(admin)
      const idsOn = (html: string) => [...html.matchAll(/href="\/console\/users\/([0-9a-f-]{36})"/g)].map(([, id]) => id ?? '')
      const first = await (await browser.follow('/console/users?search=Pagewise%20Person')).response.text()
      t.equal(idsOn(first).length, 25, 'a page of 25')
      t.notMatch(first, 'First page', 'on the first page already')
      const next = /href="(\/console\/users\?search=Pagewise\+Person&amp;cursor=[^"]+)">Next page/.exec(first)?.[1]?.replaceAll('&amp;', '&') ?? ''
      t.not(next, '', 'a link to the next page, the search kept')
      const second = await (await browser.follow(next)).response.text()
      t.equal(idsOn(second).length, 2, 'the rest')
      t.same(new Set([...idsOn(first), ...idsOn(second)]), named, 'every match once')
      t.notMatch(second, 'Next page')
      t.match(second, '<a href="/console/users?search=Pagewise+Person">First page</a>')
    })

    t.test('a user is refused the console; a moderator sees users but may not suspend', async (t) => {
      const user = await createAccount(app)
      const { browser: userBrowser, landed } = await signedIn(user)
      t.equal(landed, `${issuer}/account`, 'a person who is no operator lands on their own page')
      const refused = await userBrowser.request('/console/users')
      t.equal(refused.status, 403)
      t.match(await refused.text(), 'Not allowed')
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const target = await createAccount(app)
      const { browser, html } = await signedIn(moderator)
      t.match(html, '<table>')
      const page = await (await browser.follow(`/console/users/${target.id}`)).response.text()
      t.match(page, 'sessions need the manage_users permission')
      t.notMatch(page, '<dt>Status</dt>', 'nor is the suspension shown: the API shows it to manage_users only')
      const attempt = await browser.request(`/console/users/${target.id}/suspension`, { form: { _csrf: pageToken(page), reason: 'x' } })
      t.equal(attempt.status, 403, 'the route\'s permission, as the API\'s')
    })

    t.test('an operator whose role is taken away is refused at the next page, on the session already open', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const { browser, users } = await signedIn(admin)
      t.equal(users.response.status, 200)
      const removed = await app.inject({ method: 'DELETE', url: `/api/v1/users/${admin.id}/roles/admin`, headers: { authorization: `Bearer ${server.admin.token}` } })
      t.equal(removed.statusCode, 200)
      const refused = await browser.request('/console/users')
      t.equal(refused.status, 403, 'the guard reads the roles anew')
    })

    t.test('after sign-out the cookie is worth nothing, replayed', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const { browser, html } = await signedIn(admin)
      const cookieHeader = (await browser.request('/console/users')).headers
      t.equal(cookieHeader.get('x-frame-options'), 'DENY', 'no framing (clickjacking)')
      const replay = browser.copy()
      const signOut = await browser.request('/console/sign-out', { form: { _csrf: pageToken(html) } })
      t.equal(signOut.status, 303)
      t.match(signOut.headers.get('location'), '/oidc/session/end?client_id=console', 'on to the authorization server\'s sign-out')
      t.match(signOut.headers.getSetCookie().join('\n'), /__Host-console-session=;/, 'the cookie is cleared')
      const page = await replay.request('/console/users')
      t.equal(page.status, 303, 'a page with the old cookie sends to the sign-in')
      t.equal(page.headers.get('location'), '/console/sign-in')
      const post = await replay.request('/console/sign-out', { form: { _csrf: pageToken(html) } })
      t.equal(post.status, 401, 'a form with the old cookie is refused')
      const again = await browser.follow('/console/sign-in')
      t.match(again.url, '/oidc/interaction/', 'signing in again goes to the authorization server\'s page')
      t.match(await again.response.text(), 'name="password"', 'which asks for the password, though its own session lives')
    })

    t.test('stored XSS: a name is shown as text on every screen', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const evil = await createAccount(app, { name: '<script>alert(1)</script><img src=x onerror=alert(2)>' })
      const { browser } = await signedIn(admin)
      for (const url of ['/console/users?search=script', `/console/users/${evil.id}`]) {
        const html = await (await browser.follow(url)).response.text()
        t.notMatch(html, '<script>alert', `${url}: no script`)
        t.notMatch(html, '<img src=x', `${url}: no element`)
        t.match(html, '&lt;script&gt;alert(1)&lt;/script&gt;', `${url}: the name, escaped`)
      }
    })
  })
}
