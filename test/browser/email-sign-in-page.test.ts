import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import { createAccount, withToken } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { launchChromium, pageErrors } from '../helpers/chromium.js'
import { REDIS_ENV } from '../helpers/database.js'
import { mailServer } from '../helpers/servers/mail-server.js'

/**
 * The e-mail sign-in link's page (docs/api.md, "Signing in by e-mail") in Chromium: the page a
 * person opens from the message shows one button, runs nothing its CSP refuses, and its form sends
 * the browser back to the application with a token that signs in once. The application is a path
 * of the same server on 127.0.0.1 that answers 404: only the address it is sent to matters here.
 */

t.test('the confirmation page in Chromium: one button, no CSP violation, back to the application with a token that signs in', async (t) => {
  const browser = await launchChromium(t)
  const smtp = await mailServer(t)
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const application = `${origin}/signed-in`
  const env = {
    SMTP_URL: smtp.url(), PUBLIC_URL: origin, APP_URL: origin, OAUTH_REDIRECT_URLS: application, ...REDIS_ENV
  }
  const app = await build(t, { env })
  await app.listen({ port, host: '127.0.0.1' })
  const account = await createAccount(app)

  const asked = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in', payload: { email: account.email, redirect_to: application } })
  t.equal(asked.statusCode, 202)
  const mail = await smtp.next((message) => message.to.includes(account.email) && message.subject.includes('sign-in code'))
  const link = /(http:\/\/\S+\/email-sign-in\/confirm\?token=\S+)/.exec(mail.text)?.[1]
  t.ok(link, 'the message links to the page')

  const context = await browser.newContext()
  t.teardown(async () => await context.close())
  const page = await context.newPage()
  const errors = pageErrors(page)

  await page.goto(link as string)
  const button = page.getByRole('button', { name: 'Sign in', exact: true })
  t.ok(await button.isVisible(), 'the page asks for one click')
  t.equal(await page.locator('script').count(), 0, 'and runs no script')
  t.same(errors, [], 'no console error, no CSP violation')
  await Promise.all([page.waitForURL(`${application}?**`), button.click()])
  const token = new URL(page.url()).searchParams.get('token')
  t.ok(token, 'the application gets a token')

  const signedIn = await app.inject({ method: 'POST', url: '/api/v1/auth/email-sign-in/verify', payload: { token } })
  t.equal(signedIn.statusCode, 200, 'which signs in')
  const me = await app.inject(withToken(signedIn.json().data.access_token as string, { method: 'GET', url: '/api/v1/auth/me' }))
  t.equal(me.json().data.id, account.id, 'as the account the message was for')
  errors.length = 0
  await page.goto(link as string)
  t.ok(await page.getByText('already', { exact: false }).first().isVisible(), 'the link, opened again, says it was used')
  t.same(errors, [], 'nor on that page')
})
