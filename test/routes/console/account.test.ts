import { generateSync } from 'otplib'
import t from 'tap'
import { claimsOf, createAccount, withToken, type Account } from '../../helpers/accounts.js'
import { authorizeWithPassword, pkceAuthorization, relyingParty, startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    /** A browser signed in to the account page as `person`, and the page. */
    const signedIn = async (person: Account) => await signedInBrowser(issuer, person, '/console/sign-in?to=account')

    t.test('a person signs in to their own page, not the console, and changes their name', async (t) => {
      const person = await createAccount(app, { name: 'Pat Person' })
      const { browser, landed, html } = await signedIn(person)
      t.equal(landed, `${issuer}/account`)
      t.match(html, 'value="Pat Person"')
      t.notMatch(html, 'href="/console/users"', 'no link to the console\'s screens')
      const saved = await browser.follow('/account/profile', { form: { _csrf: pageToken(html), name: 'Pat Renamed' } })
      t.match(await saved.response.text(), 'Your name is saved.')
      const me = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.json().data.name, 'Pat Renamed')
      const missing = await browser.request('/account/profile', { form: { name: 'No Token' } })
      t.equal(missing.status, 403, 'a form without its token is refused')
    })

    t.test('a new password needs the current one on the page; then every session ends, this one too', async (t) => {
      const person = await createAccount(app)
      const { browser, html } = await signedIn(person)
      const wrong = await browser.request('/account/password', { form: { _csrf: pageToken(html), current_password: 'not-the-password', password: 'a-new-long-passphrase-1' } })
      t.ok(wrong.status >= 400 && wrong.status < 500, 'a wrong current password is refused')
      t.match(await wrong.text(), 'class="error"')
      const changed = await browser.request('/account/password', { form: { _csrf: pageToken(html), current_password: person.password, password: 'a-new-long-passphrase-1' } })
      t.equal(changed.status, 303)
      const old = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: person.password } })
      t.equal(old.statusCode, 401, 'the old password no longer signs in')
      const after = await browser.request('/account')
      t.equal(after.headers.get('location'), '/console/sign-in?to=account', 'the page\'s own session ended with the others')
    })

    t.test('sessions: this one marked, another ended; an application revoked; the export downloaded', async (t) => {
      const person = await createAccount(app)
      const { rp, redirectUri, config } = await relyingParty(t, server, { name: 'Photo <Gallery>', grant_types: ['authorization_code'], scopes: ['openid', 'email'] })
      t.ok(rp, 'a relying party')
      const { browser } = await signedIn(person)
      const { url } = await pkceAuthorization(config, redirectUri, 'openid email')
      await authorizeWithPassword(browser, url.href, person)
      const page = await (await browser.follow('/account')).response.text()
      t.match(page, 'This session')
      t.match(page, 'Photo &lt;Gallery&gt;', 'the application, its name escaped')
      const jti = claimsOf(person.token).jti as string
      const other = await app.repositories.sessions.sessionOfAccessToken(person.id, jti)
      t.match(page, `action="/account/sessions/${other ?? ''}/end"`, 'another session (the API sign-in of the test\'s setup) can be ended')
      const ended = await browser.follow(`/account/sessions/${other ?? ''}/end`, { form: { _csrf: pageToken(page) } })
      t.match(await ended.response.text(), 'The session is ended.')
      const me = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 401, 'its access token stopped working')
      const grant = page.match(/action="\/account\/applications\/([^/"]+)\/revoke"/)?.[1] ?? ''
      const revoked = await browser.follow(`/account/applications/${grant}/revoke`, { form: { _csrf: pageToken(page) } })
      const revokedHtml = await revoked.response.text()
      t.match(revokedHtml, 'The application may no longer sign you in')
      t.match(revokedHtml, 'No application may sign you in.')
      const exported = await browser.request('/account/export')
      t.equal(exported.status, 200)
      t.match(exported.headers.get('content-disposition'), 'attachment')
      const body = await exported.text()
      t.equal(JSON.parse(body).data.user.email, person.email)
      t.notMatch(body, /password_hash|pbkdf2/, 'no secret in it')
    })

    t.test('deleting one\'s account takes its proof; then the account and the page\'s session are gone', async (t) => {
      const person = await createAccount(app)
      const { browser, html } = await signedIn(person)
      const unproved = await browser.request('/account/deletion', { form: { _csrf: pageToken(html) } })
      t.ok(unproved.status >= 400 && unproved.status < 500, 'no proof: refused')
      const stillThere = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(stillThere.statusCode, 200, 'nothing deleted')
      const deleted = await browser.request('/account/deletion', { form: { _csrf: pageToken(html), current_password: person.password } })
      t.equal(deleted.status, 200)
      t.match(await deleted.text(), 'Your account is deleted.')
      const gone = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: person.password } })
      t.equal(gone.statusCode, 401, 'it no longer signs in')
      const after = await browser.request('/account')
      t.equal(after.status, 303, 'the page sends the browser to sign in')
    })

    t.test('another account\'s session or consent is not found from one\'s own page', async (t) => {
      const victim = await createAccount(app)
      const { rp, redirectUri, config } = await relyingParty(t, server, { name: 'Victim App', grant_types: ['authorization_code'], scopes: ['openid'] })
      t.ok(rp)
      const victimBrowser = (await signedIn(victim)).browser
      await authorizeWithPassword(victimBrowser, (await pkceAuthorization(config, redirectUri, 'openid')).url.href, victim)
      const victimJti = claimsOf(victim.token).jti as string
      const victimSession = await app.repositories.sessions.sessionOfAccessToken(victim.id, victimJti)
      const grants = await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/grants' }))
      const victimGrant: string = grants.json().data[0].id
      const attacker = await createAccount(app)
      const { browser, html } = await signedIn(attacker)
      const ended = await browser.request(`/account/sessions/${victimSession ?? ''}/end`, { form: { _csrf: pageToken(html) } })
      t.equal(ended.status, 404, 'another account\'s session: not found')
      const revoked = await browser.request(`/account/applications/${victimGrant}/revoke`, { form: { _csrf: pageToken(html) } })
      t.equal(revoked.status, 404, 'another account\'s consent: not found')
      const still = await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/grants' }))
      t.equal(still.json().data.length, 1, 'the victim\'s consent stands')
      t.equal((await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'and their session')
    })

    t.test('a wrong code is the form\'s error: the page stays signed in', async (t) => {
      const person = await createAccount(app)
      const { browser, html } = await signedIn(person)
      const setUp = await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup', payload: {} }))
      const { secret } = setUp.json().data
      const enabled = await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret }) } }))
      t.equal(enabled.statusCode, 200)
      const wrong = generateSync({ secret }) === '000000' ? '111111' : '000000'
      const refused = await browser.request('/account/deletion', { form: { _csrf: pageToken(html), current_password: person.password, mfa_code: wrong } })
      t.equal(refused.status, 401)
      t.match(await refused.text(), 'Invalid MFA code')
      t.notMatch(refused.headers.getSetCookie().join('\n'), '__Host-console-session=;', 'the cookie is kept')
      t.equal((await browser.request('/account')).status, 200, 'still signed in')
    })

    t.test('a bearer token is not a way into the pages: only the console\'s cookie is', async (t) => {
      const person = await createAccount(app)
      const answer = await app.inject(withToken(person.token, { method: 'GET', url: '/account' }))
      t.equal(answer.statusCode, 303)
      t.equal(answer.headers.location, '/console/sign-in?to=account')
    })
  })
}
