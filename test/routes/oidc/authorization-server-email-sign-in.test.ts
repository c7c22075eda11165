import * as client from 'openid-client'
import t from 'tap'
import { createAccount } from '../../helpers/accounts.js'
import {
  CookieBrowser, exchange, formToken, pkceAuthorization, relyingParty, startAuthorizationServer
} from '../../helpers/authorization-server.js'
import { backends, suiteName } from '../../helpers/database.js'
import { APP_URL } from '../../helpers/organizations.js'
import { mailServer, type ReceivedMail } from '../../helpers/servers/mail-server.js'

/**
 * The authorization server's sign-in page offers signing in by e-mail (docs/api.md, "Signing in
 * by e-mail"): the code typed on the page, or the message's link, confirmed on the API's page,
 * coming back to the same sign-in; in another browser the link's sign-in has nothing to return
 * to, and the code still works where the sign-in began.
 */

const codeOf = (mail: ReceivedMail) => /sign-in code is (\d{6})/.exec(mail.text)?.[1] ?? ''
const linkOf = (mail: ReceivedMail) => /(http:\/\/\S+\/email-sign-in\/confirm\?token=\S+)/.exec(mail.text)?.[1] ?? ''

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const smtp = await mailServer(t)
    const server = await startAuthorizationServer(t, backend.url, async (issuer) => ({
      PUBLIC_URL: issuer, SMTP_URL: smtp.url(), APP_URL
    }))
    const { app, issuer } = server
    const { redirectUri, config } = await relyingParty(t, server, { name: 'Intranet', grant_types: ['authorization_code'], scopes: ['openid', 'email'] })
    const signInMail = (email: string) => async () => await smtp.next((mail) => mail.to.includes(email) && mail.subject.includes('sign-in code'))

    /** A relying party's sign-in begun in `browser`, up to the page after asking for a code. */
    const askedForCode = async (browser: CookieBrowser, email: string) => {
      const request = await pkceAuthorization(config, redirectUri, 'openid email')
      const login = await browser.follow(request.url.href)
      const html = await login.response.text()
      const asked = await browser.follow(`${login.url}/email-code`, { form: { csrf: formToken(html), email } })
      return { request, login, html, asked }
    }

    t.test('the code typed on the page signs in, and the application gets its tokens', async (t) => {
      const person = await createAccount(app)
      const browser = new CookieBrowser(issuer)
      const { request, login, html, asked } = await askedForCode(browser, person.email)
      t.match(html, /formaction="[^"]+\/email-code" formnovalidate>E-mail me a sign-in code</, 'the sign-in page offers it')
      t.equal(asked.response.status, 200)
      const page = await asked.response.text()
      t.match(page, 'Enter the code')
      const code = codeOf(await signInMail(person.email)())
      const wrong = await browser.follow(`${login.url}/email`, { form: { csrf: formToken(page), email: person.email, code: code === '000000' ? '111111' : '000000' } })
      t.equal(wrong.response.status, 400, 'a wrong code: the page again')
      t.match(await wrong.response.text(), 'Invalid, used or expired token')
      const consent = await browser.follow(`${login.url}/email`, { form: { csrf: formToken(page), email: person.email, code } })
      t.match(consent.url, /\/oidc\/interaction\/[^/]+$/, 'signed in: the consent page')
      const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
      const tokens = await exchange(config, new URL(allowed.url), request)
      t.match(tokens.claims(), { amr: ['otp'], acr: '1', sub: person.id })
      t.match(await client.fetchUserInfo(config, tokens.access_token, person.id), { email: person.email })
      const forged = await browser.follow(`${login.url}/email-code`, { form: { csrf: 'forged', email: person.email } })
      t.match(forged.url, /\/oidc\/interaction\//, 'a forged form sends nothing')
    })

    t.test('the link, confirmed in the browser that asked, comes back to its sign-in; in another, that sign-in is not there', async (t) => {
      const person = await createAccount(app)
      const browser = new CookieBrowser(issuer)
      const { request } = await askedForCode(browser, person.email)
      const link = linkOf(await signInMail(person.email)())
      t.ok(link.startsWith(`${issuer}/api/v1/auth/email-sign-in/confirm?token=`), link)
      const confirmPage = await browser.follow(link)
      t.match(await confirmPage.response.text(), person.email)
      const token = new URL(link).searchParams.get('token') ?? ''
      const consent = await browser.follow(`${issuer}/api/v1/auth/email-sign-in/confirm`, { form: { token } })
      t.match(consent.url, /\/oidc\/interaction\/[^/]+$/, 'back on the pages, signed in: the consent page')
      const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
      t.match((await exchange(config, new URL(allowed.url), request)).claims(), { sub: person.id })

      // Asked in one browser, the link opened in another: the sign-in is the first's, where the code still works.
      const first = new CookieBrowser(issuer)
      const asked = await askedForCode(first, person.email)
      const mail = await signInMail(person.email)()
      const other = new CookieBrowser(issuer)
      const linkToken = new URL(linkOf(mail)).searchParams.get('token') ?? ''
      const elsewhere = await other.follow(`${issuer}/api/v1/auth/email-sign-in/confirm`, { form: { token: linkToken } })
      t.equal(elsewhere.response.status, 400)
      t.match(await elsewhere.response.text(), 'began in another browser or device', 'told to continue where it began')
      const page = await asked.asked.response.text()
      const form = { csrf: formToken(page), email: person.email, code: codeOf(mail) }
      const signedIn = await first.follow(`${asked.login.url}/email`, { form })
      // Consent was given by the first sign-in: straight back to the application with its code.
      t.ok(signedIn.url.startsWith(`${redirectUri}?code=`), 'the code still signs in where the sign-in began')
    })
  })
}
