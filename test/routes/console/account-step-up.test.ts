import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { type CookieBrowser, startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'
import { MailServer } from '../../helpers/servers/mail-server.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

/**
 * Proving it is you on the account page (docs/console.md, "The account page's sensitive
 * changes"): with a passkey, or a code sent by e-mail, for the proofs a form's fields cannot carry.
 */

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const smtp = await new MailServer().start()
    t.teardown(async () => await smtp.stop())
    const server = await startAuthorizationServer(t, backend.url, { SMTP_URL: smtp.url() })
    const { app, issuer } = server

    /** A person with a password and a passkey (a second factor: a password alone proves nothing). */
    async function withPasskey (authenticator: SoftwareAuthenticator) {
      const person = await createAccount(app)
      const options = await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/passkeys/registration/options' }))
      const added = await app.inject(withToken(person.token, {
        method: 'POST', url: '/api/v1/auth/passkeys', payload: { response: authenticator.register(options.json().data), name: 'Laptop' }
      }))
      t.equal(added.statusCode, 201)
      return person
    }

    async function accountPage (browser: CookieBrowser) {
      return await (await browser.follow('/account')).response.text()
    }

    const newAddress = async (browser: CookieBrowser, person: Account, proof: Record<string, string>) =>
      await browser.follow('/account/email', { form: { _csrf: pageToken(await accountPage(browser)), email: `new-${person.email}`, ...proof } })

    /** The page's script's part: the options (the form's token in a header), the authenticator's answer, the form. */
    async function proveWithPasskey (browser: CookieBrowser, authenticator: SoftwareAuthenticator) {
      const csrf = pageToken(await accountPage(browser))
      const options = await browser.request('/account/reauthenticate/options', { method: 'POST', headers: { 'x-csrf-token': csrf } })
      t.equal(options.status, 200)
      const { data } = await options.json() as { data: { challenge_id: string, options: { challenge: string } } }
      const response = JSON.stringify(authenticator.assert(data.options))
      return await browser.follow('/account/reauthenticate', { form: { _csrf: csrf, challenge_id: data.challenge_id, response } })
    }

    t.test('a person with a passkey proves it is you with it; the next sensitive change asks nothing more', async (t) => {
      const authenticator = new SoftwareAuthenticator()
      const person = await withPasskey(authenticator)
      const { browser } = await signedInBrowser(issuer, person, '/console/sign-in?to=account')
      const page = await accountPage(browser)
      t.match(page, 'Prove it with a passkey')
      t.notMatch(page, 'Send me a code', 'no codes by message to offer')

      const refused = await newAddress(browser, person, { current_password: person.password })
      t.equal(refused.response.status, 403, 'a passkey is a second factor: the password alone proves nothing')

      const proved = await proveWithPasskey(browser, authenticator)
      t.match(await proved.response.text(), 'You proved it is you')
      const changed = await newAddress(browser, person, {})
      t.match(changed.url, '?done=email', 'the new address, without a proof on the form')
      const audit = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/audit-logs?event=auth.reauthenticated&actor_id=${person.id}` }))
      t.match(audit.json().data, [{ details: { method: 'passkey' } }])
    })

    t.test('refused: another account\'s passkey, options without the page\'s token', async (t) => {
      const person = await withPasskey(new SoftwareAuthenticator())
      const strangers = new SoftwareAuthenticator()
      await withPasskey(strangers)
      const { browser } = await signedInBrowser(issuer, person, '/console/sign-in?to=account')
      const foreign = await proveWithPasskey(browser, strangers)
      t.equal(foreign.response.status, 401, 'a passkey of another account proves nothing of this one')
      t.equal((await newAddress(browser, person, {})).response.status, 403, 'no step-up')

      const noToken = await browser.request('/account/reauthenticate/options', { method: 'POST' })
      t.equal(noToken.status, 403)
      const forged = await browser.request('/account/reauthenticate', { form: { challenge_id: 'x', response: '{}' } })
      t.equal(forged.status, 403)
    })

    t.test('a person with codes by e-mail has one sent, and enters it in the form\'s code field', async (t) => {
      const person = await createAccount(app)
      const { browser } = await signedInBrowser(issuer, person, '/console/sign-in?to=account')
      // Turned on since (by the API, in another session): the page's session is open already.
      t.equal((await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/email/enable' }))).statusCode, 204)
      const page = await accountPage(browser)
      t.match(page, 'Send me a code by e-mail')
      t.notMatch(page, 'Prove it with a passkey')
      const sent = await browser.follow('/account/reauthenticate/code', { form: { _csrf: pageToken(page), method: 'email' } })
      t.match(await sent.response.text(), 'A code is on its way')
      const mail = await smtp.next((message) => message.to.includes(person.email) && /code/i.test(message.subject))
      const code = /\b(\d{6})\b/.exec(mail.text)?.[1] ?? ''
      const changed = await newAddress(browser, person, { mfa_code: code })
      t.match(changed.url, '?done=email', 'the code proved it')
    })
  })
}
