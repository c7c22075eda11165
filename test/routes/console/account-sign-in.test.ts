import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { createAccount, uniqueEmail, withToken, type Account } from '../../helpers/accounts.js'
import type { CookieBrowser } from '../../helpers/authorization-server.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'

/** The account page's sign-in forms: address, authenticator app, backup codes, linked providers (docs/console.md). */

const codeOf = (secret: string, offset = 0) =>
  generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 })

async function apiLogin (app: FastifyInstance, email: string, password: string) {
  return await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
}

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    async function accountPage (account: Account) {
      const { browser, html } = await signedInBrowser(issuer, account, '/console/sign-in?to=account')
      return { browser, html }
    }
    async function page (browser: CookieBrowser, url: string) {
      const { response } = await browser.follow(url)
      return await response.text()
    }
    /** Sets the authenticator app up on the page as a person does; its key, and the page of backup codes. */
    async function setUpTotp (browser: CookieBrowser, account: Account, html: string) {
      const setup = await browser.request('/account/totp/setup', { form: { _csrf: pageToken(html) } })
      const setupHtml = await setup.text()
      const key = /<dt>Key<\/dt><dd><code>([A-Z2-7 ]+)<\/code>/.exec(setupHtml)?.[1]?.replace(/ /g, '') ?? ''
      const enabled = await browser.request('/account/totp/enable', { form: { _csrf: pageToken(setupHtml), code: codeOf(key), current_password: account.password, mfa_code: '' } })
      return { setup, setupHtml, key, enabled, enabledHtml: await enabled.text() }
    }

    t.test('a person sets up an authenticator app: a QR code and its key, the code and the password, then the backup codes once', async (t) => {
      const account = await createAccount(app)
      const { browser, html } = await accountPage(account)
      t.match(html, 'Set up an authenticator app')
      const { setup, setupHtml, key, enabled, enabledHtml } = await setUpTotp(browser, account, html)
      t.equal(setup.status, 200)
      t.equal(setup.headers.get('cache-control'), 'no-store', 'the key is never cached')
      t.match(setupHtml, /<svg role="img" aria-label="QR code[^"]*"/, 'the QR code, drawn inline: the CSP allows no data: image')
      t.match(setup.headers.get('content-security-policy'), /img-src 'self'(;|$)/)
      t.equal(key.length >= 16, true, 'and the key as text')
      t.equal(enabled.status, 200)
      const codes = [...enabledHtml.matchAll(/<li><code>(\d{6})<\/code><\/li>/g)].map((match) => match[1])
      t.equal(codes.length, 10, 'ten backup codes, shown once')
      t.equal(enabled.headers.get('cache-control'), 'no-store')
      t.match(await page(browser, '/account'), 'Your authenticator app is on. Backup codes left: 10.')
      t.equal((await apiLogin(app, account.email, account.password)).json().data.mfa_required, true, 'sign-in asks for a code from now on')
    })

    t.test('turning the app on needs the proof, and a right code of the key', async (t) => {
      const account = await createAccount(app)
      const { browser, html } = await accountPage(account)
      const setup = await browser.request('/account/totp/setup', { form: { _csrf: pageToken(html) } })
      const setupHtml = await setup.text()
      const key = /<dt>Key<\/dt><dd><code>([A-Z2-7 ]+)<\/code>/.exec(setupHtml)?.[1]?.replace(/ /g, '') ?? ''
      const withoutProof = await browser.request('/account/totp/enable', { form: { _csrf: pageToken(setupHtml), code: codeOf(key) } })
      t.equal(withoutProof.status, 403, 'no proof: refused')
      t.match(await withoutProof.text(), 'current_password')
      const wrongCode = await browser.request('/account/totp/enable', { form: { _csrf: pageToken(setupHtml), code: '000000', current_password: account.password } })
      t.equal(wrongCode.status, 401, 'a wrong code: refused')
      t.equal((await page(browser, '/account')).includes('Set up an authenticator app'), true, 'still off; the page stays signed in')
      t.notOk((await apiLogin(app, account.email, account.password)).json().data.mfa_required)
    })

    t.test('new backup codes take a code of the app; turning it off, one or a backup code; a wrong one counts toward the lockout', async (t) => {
      const account = await createAccount(app)
      const { browser, html } = await accountPage(account)
      const { key } = await setUpTotp(browser, account, html)
      let current = await page(browser, '/account')
      const replaced = await browser.request('/account/backup-codes', { form: { _csrf: pageToken(current), code: codeOf(key, 1) } })
      t.equal(replaced.status, 200)
      const backupCodes = [...(await replaced.text()).matchAll(/<li><code>(\d{6})<\/code><\/li>/g)].map((match) => match[1] ?? '')
      t.equal(backupCodes.length, 10, 'a new set')
      current = await page(browser, '/account')
      const wrong = await browser.request('/account/totp/disable', { form: { _csrf: pageToken(current), code: '000000' } })
      t.equal(wrong.status, 401)
      const failures = await app.database.db.selectFrom('audit_logs').select('event').where('target_id', '=', account.id).where('event', '=', 'auth.mfa_failed').execute()
      t.equal(failures.length, 1, 'audited as a failed code, as the API\'s route does')
      const off = await browser.follow('/account/totp/disable', { form: { _csrf: pageToken(current), code: backupCodes[0] ?? '' } })
      t.match(await off.response.text(), 'The authenticator app is off.')
      t.notOk((await apiLogin(app, account.email, account.password)).json().data.mfa_required, 'the password alone signs in again')
    })

    t.test('a new address takes the proof; it is unverified until its link is followed', async (t) => {
      const account = await createAccount(app)
      const { browser, html } = await accountPage(account)
      const email = uniqueEmail('moved')
      const refused = await browser.request('/account/email', { form: { _csrf: pageToken(html), email } })
      t.equal(refused.status, 403, 'no proof: refused')
      const changed = await browser.follow('/account/email', { form: { _csrf: pageToken(html), email, current_password: account.password } })
      t.match(await changed.response.text(), 'Your address is changed')
      const me = await app.inject(withToken((await apiLogin(app, email, account.password)).json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.match(me.json().data, { email, email_verified: false })
    })

    t.test('a linked provider is listed and unlinked with the proof', async (t) => {
      const account = await createAccount(app)
      // Linked in the store, as a provider's sign-in links it (that flow has tests of its own).
      await app.repositories.identities.link('github', `subject-${account.id}`, account.id, account.email)
      const { browser, html } = await accountPage(account)
      t.match(html, '<td>github</td>')
      const identity = /<option value="([0-9a-f-]+)">github/.exec(html)?.[1] ?? ''
      const refused = await browser.request('/account/identities/unlink', { form: { _csrf: pageToken(html), identity } })
      t.equal(refused.status, 403, 'no proof: refused')
      const unlinked = await browser.follow('/account/identities/unlink', { form: { _csrf: pageToken(html), identity, current_password: account.password } })
      t.match(await unlinked.response.text(), 'The provider is unlinked')
      t.same(await app.repositories.identities.listFor(account.id), [])
    })

    t.test('forms refuse a missing or wrong token, and nothing changes', async (t) => {
      const account = await createAccount(app)
      const { browser } = await accountPage(account)
      for (const [url, form] of [
        ['/account/totp/setup', {}],
        ['/account/email', { email: uniqueEmail('forged'), current_password: account.password }],
        ['/account/backup-codes', { code: '123456' }],
        ['/account/totp/disable', { code: '123456' }],
        ['/account/identities/unlink', { identity: '00000000-0000-7000-8000-000000000000', current_password: account.password }]
      ] as Array<[string, Record<string, string>]>) {
        for (const token of [{}, { _csrf: 'forged' }] as Array<Record<string, string>>) {
          const answer = await browser.request(url, { form: { ...form, ...token } })
          t.equal(answer.status, 403, `${url}, ${JSON.stringify(token)}: refused`)
          t.match(await answer.text(), 'This form has expired')
        }
      }
      t.equal((await apiLogin(app, account.email, account.password)).statusCode, 200, 'the address is unchanged')
    })
  })
}
