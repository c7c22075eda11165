import t from 'tap'
import { createAccount, enableTotp, withToken, type Account } from '../../helpers/accounts.js'
import type { CookieBrowser } from '../../helpers/authorization-server.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'

/** A user's page in the console: sign-in methods and their reset, sessions and their end (docs/console.md). */

const EVIL_DEVICE = '<img src=x onerror=alert(1)>Phone'

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    const signedIn = async (account: Account) => (await signedInBrowser(issuer, account)).browser
    async function page (browser: CookieBrowser, url: string) {
      const { response } = await browser.follow(url)
      return { status: response.status, html: await response.text() }
    }
    /** The user signed in once more from a device whose name an attacker chose: that session's tokens. */
    async function signedInFromEvilDevice (user: Account) {
      const login = await app.inject({
        method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password, device: { id: 'evil', name: EVIL_DEVICE } }
      })
      return login.json().data as { access_token: string, refresh_token: string }
    }

    async function evilSessionOf (user: Account): Promise<string> {
      const listed = await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      return (listed.json().data as Array<{ id: string, device: { id?: string } }>).find((session) => session.device.id === 'evil')?.id ?? ''
    }

    t.test('an admin ends a user\'s session from their page; the device the attacker named is shown as text', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const evil = await signedInFromEvilDevice(user)
      const browser = await signedIn(admin)
      const before = await page(browser, `/console/users/${user.id}`)
      t.equal(before.status, 200)
      t.notMatch(before.html, '<img src=x', 'no element from the device\'s name')
      t.match(before.html, '&lt;img src=x onerror=alert(1)&gt;Phone')
      t.match(before.html, 'aria-label="End the session of &lt;img src=x onerror=alert(1)&gt;Phone"', 'its end button named for its device')
      const sessionId = await evilSessionOf(user)
      t.match(before.html, `/console/users/${user.id}/sessions/${sessionId}/end`, 'with its own form')

      const ended = await browser.follow(`/console/users/${user.id}/sessions/${sessionId}/end`, { form: { _csrf: pageToken(before.html) } })
      t.match(await ended.response.text(), 'The session is ended.')
      const refresh = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: evil.refresh_token } })
      t.equal(refresh.statusCode, 401, 'its refresh token no longer works')
      t.equal((await app.inject(withToken(evil.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401, 'nor its access token')
      t.equal((await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'the user\'s other session goes on')
      const audit = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/audit-logs?event=session.ended&actor_id=${admin.id}` }))
      t.match(audit.json().data, [{ target_id: user.id }], 'audited, the operator its actor')
    })

    t.test('an admin sees a user\'s second factors and resets them; the user then signs in with the password alone', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      await enableTotp(app, user)
      const browser = await signedIn(admin)
      const before = await page(browser, `/console/users/${user.id}`)
      t.match(before.html, '<dt>Authenticator app (TOTP)</dt><dd>yes</dd>')
      t.match(before.html, '<dt>Backup codes left</dt><dd>10</dd>')
      t.match(before.html, 'Reset the second factors')

      const withoutProof = await browser.request(`/console/users/${user.id}/mfa/reset`, { form: { _csrf: pageToken(before.html) } })
      t.equal(withoutProof.status, 403, 'a change to how the account signs in: the operator\'s proof first')
      const reset = await browser.follow(`/console/users/${user.id}/mfa/reset`, { form: { _csrf: pageToken(before.html), current_password: admin.password } })
      const after = await reset.response.text()
      t.match(after, 'The second factors are off')
      t.match(after, '<dt>Authenticator app (TOTP)</dt><dd>no</dd>')
      t.notMatch(after, 'Reset the second factors', 'nothing left to reset')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      t.type(login.json().data.access_token, 'string')
    })

    t.test('the new forms refuse a missing and a wrong token, and nothing changes', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const evil = await signedInFromEvilDevice(user)
      await enableTotp(app, user)
      const browser = await signedIn(admin)
      const sessionId = await evilSessionOf(user)
      for (const url of [`/console/users/${user.id}/sessions/${sessionId}/end`, `/console/users/${user.id}/mfa/reset`]) {
        for (const form of [{}, { _csrf: 'forged' }] as Array<Record<string, string>>) {
          const answer = await browser.request(url, { form })
          t.equal(answer.status, 403, `${url}, ${JSON.stringify(form)}: refused`)
        }
      }
      t.equal((await app.inject(withToken(evil.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'no session ended')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })
      t.equal(login.json().data.mfa_required, true, 'no second factor reset')
    })

    t.test('an admin on a super_admin\'s page: told it is not theirs, and the forms are refused', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const target = await createAccount(app, { roles: ['super_admin'] })
      await enableTotp(app, target)
      const sessionId = (await app.inject(withToken(target.token, { method: 'GET', url: '/api/v1/auth/sessions' }))).json().data[0].id as string
      const browser = await signedIn(admin)
      const { status, html } = await page(browser, `/console/users/${target.id}`)
      t.equal(status, 200)
      t.match(html, 'This account holds permissions you lack')
      t.notMatch(html, '/sessions/', 'no session listed')
      for (const url of [`/console/users/${target.id}/sessions/${sessionId}/end`, `/console/users/${target.id}/mfa/reset`]) {
        const answer = await browser.request(url, { form: { _csrf: pageToken(html) } })
        t.equal(answer.status, 403, `${url}: refused by the rank rule`)
      }
      t.equal((await app.inject(withToken(target.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'still signed in')
    })
  })
}
