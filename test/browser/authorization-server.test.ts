import { generateSync } from 'otplib'
import * as client from 'openid-client'
import type { Page } from 'playwright-core'
import { PNG } from 'pngjs'
import t, { type Test } from 'tap'
import { createAccount, withToken } from '../helpers/accounts.js'
import { exchange, insecure, pkceAuthorization, relyingParty, startAuthorizationServer } from '../helpers/authorization-server.js'
import { launchChromium, pageErrors } from '../helpers/chromium.js'
import { backends } from '../helpers/database.js'

/** The page as a person sees it: a PNG of its size, not blank, with the form's button visible. */
async function checkScreenshot (t: Test, page: Page, button: string): Promise<void> {
  t.ok(await page.getByRole('button', { name: button, exact: true }).isVisible(), `the "${button}" button is shown`)
  const png = PNG.sync.read(await page.screenshot({ fullPage: true }))
  t.ok(png.width > 0 && png.height > 0, 'a screenshot was taken')
  const colours = new Set<number>()
  for (let index = 0; index < png.data.length; index += 4 * 97) colours.add(png.data.readUInt32BE(index))
  t.ok(colours.size > 2, 'the page rendered something besides its background')
}

t.test('relying parties sign people in with the service, in Chromium, through openid-client', async (t) => {
  const browser = await launchChromium(t)
  /** A new browser profile's page, closed at the test's end, and its console errors. */
  async function freshPage (t: Test) {
    const context = await browser.newContext()
    t.teardown(async () => await context.close())
    const page = await context.newPage()
    return { context, page, errors: pageErrors(page) }
  }

  for (const backend of backends()) {
    t.test(backend.name, async (t) => {
      const server = await startAuthorizationServer(t, backend.url)
      const { app, issuer } = server
      const { rp, redirectUri, config } = await relyingParty(t, server, {
        name: 'Photo Gallery', grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'profile', 'email', 'offline_access']
      })

      async function authorizationRequest () {
        const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid email profile')
        return { url: url.href, verifier, state }
      }

      t.test('sign-in page, consent page, back with a code; then RP-initiated logout ends the session', async (t) => {
        const person = await createAccount(app, { name: 'Grace Hopper' })
        const { page, errors } = await freshPage(t)
        const request = await authorizationRequest()

        await page.goto(request.url)
        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        t.equal(await page.title(), 'Sign in')
        t.match(await page.textContent('main'), /Photo Gallery/)
        await checkScreenshot(t, page, 'Sign in')
        await page.getByLabel('E-mail').fill(person.email)
        await page.getByLabel('Password').fill(person.password)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()

        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        t.equal(await page.title(), 'Allow access')
        t.match(await page.textContent('main'), /See your e-mail address/)
        await checkScreenshot(t, page, 'Allow')
        await page.getByRole('button', { name: 'Allow' }).click()

        await page.waitForURL(`${redirectUri}?**`)
        const tokens = await exchange(config, new URL(page.url()), request)
        t.match(tokens.claims(), { sub: person.id, amr: ['pwd'], acr: '1' })
        // With an access token issued, the profile is read at userinfo (OpenID Connect Core 5.4).
        t.match(await client.fetchUserInfo(config, tokens.access_token, person.id), { email: person.email, name: 'Grace Hopper' })

        // Signed in at the authorization server: a second request comes straight back.
        const again = await authorizationRequest()
        await page.goto(again.url)
        await page.waitForURL(`${redirectUri}?**`)
        t.match(page.url(), /code=/, 'no sign-in and no consent the second time')

        // response_mode=form_post: the self-submitting form runs under the pages' CSP (its script allowed by hash).
        const posted = await pkceAuthorization(config, redirectUri, 'openid', { response_mode: 'form_post' })
        await page.goto(posted.url.href)
        await page.waitForURL(redirectUri)
        t.pass('the code was posted to the application by the page\'s script')

        await page.goto(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out` }).href)
        t.equal(await page.title(), 'Sign out')
        t.ok(await page.getByRole('link', { name: 'Stay signed in' }).isVisible(), 'staying is a link back to the application')
        await checkScreenshot(t, page, 'Sign out')
        await page.getByRole('button', { name: 'Sign out', exact: true }).click()
        await page.waitForURL(`${rp}/signed-out**`)
        const afterLogout = await authorizationRequest()
        await page.goto(afterLogout.url)
        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        t.equal(await page.title(), 'Sign in', 'signed out: the next request asks to sign in')
        t.same(errors, [], 'no console error on any page')
      })

      t.test('an account with MFA: the code page after the password', async (t) => {
        const person = await createAccount(app)
        const setup = await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
        const secret = setup.json().data.secret as string
        const enabled = await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret }) } }))
        const backupCodes = enabled.json().data.backup_codes as string[]
        const { page, errors } = await freshPage(t)
        const request = await authorizationRequest()
        await page.goto(request.url)
        await page.getByLabel('E-mail').fill(person.email)
        await page.getByLabel('Password').fill(person.password)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.waitForSelector('input[name=code]')
        t.equal(await page.title(), 'Two-step verification')
        await checkScreenshot(t, page, 'Continue')
        await page.getByLabel('Code').fill('000000')
        await page.getByRole('button', { name: 'Continue' }).click()
        await page.waitForSelector('[role=alert]')
        t.match(await page.textContent('[role=alert]'), /code/i, 'a wrong code is said so')
        t.match(errors, [/status of 400/], 'the refused code\'s page is answered 400, which Chromium reports')
        errors.length = 0
        await page.getByLabel('Code').fill(backupCodes[0] ?? '')
        await page.getByRole('button', { name: 'Continue' }).click()
        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        await page.getByRole('button', { name: 'Allow' }).click()
        await page.waitForURL(`${redirectUri}?**`)
        const tokens = await exchange(config, new URL(page.url()), request)
        t.match(tokens.claims(), { sub: person.id, acr: '2' })
        t.ok((tokens.claims()?.amr as string[]).includes('mfa'))
        t.same(errors, [])
      })

      t.test('the device grant: a CLI shows a code, the person approves it in the browser', async (t) => {
        const cli = await server.register({
          name: 'Command line', confidential: false, redirect_uris: [], grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], scopes: ['openid', 'email']
        })
        const cliConfig = await client.discovery(new URL(issuer), cli.id, undefined, client.None(), insecure)
        const person = await createAccount(app)
        const device = await client.initiateDeviceAuthorization(cliConfig, { scope: 'openid email' })
        t.match(device.user_code, /^[A-Z]{4}-[A-Z]{4}$/)
        const { page, errors } = await freshPage(t)
        await page.goto(device.verification_uri ?? '')
        t.equal(await page.title(), 'Connect a device')
        // The code field has its label: found by it, as a screen reader names it.
        await page.getByLabel('Code').fill(device.user_code)
        await page.getByRole('button', { name: 'Continue' }).click()
        await page.waitForFunction(() => document.querySelector('code') !== null)
        t.match(await page.textContent('main'), /Command line/)
        await checkScreenshot(t, page, 'Continue')
        await page.getByRole('button', { name: 'Continue' }).click()
        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        await page.getByLabel('E-mail').fill(person.email)
        await page.getByLabel('Password').fill(person.password)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.waitForURL(`${issuer}/oidc/interaction/**`)
        await page.getByRole('button', { name: 'Allow' }).click()
        await page.waitForFunction(() => document.title === 'Device connected')
        const tokens = await client.pollDeviceAuthorizationGrant(cliConfig, device)
        t.match(tokens.claims(), { sub: person.id })
        t.match(await client.fetchUserInfo(cliConfig, tokens.access_token, person.id), { email: person.email })
        t.same(errors, [])
      })
    })
  }

  t.test('a passkey on the sign-in page, through the one script the pages load', async (t) => {
    const server = await startAuthorizationServer(t, null, {}, 'localhost')
    const { app, issuer } = server
    const { redirectUri, config } = await relyingParty(t, server, { name: 'Notes', grant_types: ['authorization_code'], scopes: ['openid'] })
    const person = await createAccount(app)

    const { context, page, errors } = await freshPage(t)
    const devtools = await context.newCDPSession(page)
    await devtools.send('WebAuthn.enable')
    await devtools.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
    })
    // The person adds a passkey through the API, from a page of the service's origin.
    await page.goto(`${issuer}/oidc/pages.css`)
    await page.addScriptTag({ url: '/oidc/webauthn.js' })
    const added = await page.evaluate(async (token) => {
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
      const options = await (await fetch('/api/v1/auth/passkeys/registration/options', { method: 'POST', headers: { authorization: headers.authorization } })).json()
      const response = await (window as any).SimpleWebAuthnBrowser.startRegistration({ optionsJSON: options.data })
      return (await fetch('/api/v1/auth/passkeys', { method: 'POST', headers, body: JSON.stringify({ response, name: 'Laptop' }) })).status
    }, person.token)
    t.equal(added, 201)

    const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid')
    await page.goto(url.href)
    await page.waitForURL(`${issuer}/oidc/interaction/**`)
    await checkScreenshot(t, page, 'Sign in with a passkey')
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
    await page.waitForSelector('text=asks to')
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.waitForURL(`${redirectUri}?**`)
    const tokens = await exchange(config, new URL(page.url()), { verifier, state })
    t.match(tokens.claims(), { sub: person.id, acr: '2', amr: ['hwk', 'user', 'mfa'] }, 'a verified passkey proves two factors')
    t.same(errors, [])
  })
})
