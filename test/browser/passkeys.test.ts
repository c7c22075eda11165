import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import t from 'tap'
import { launchChromium } from '../helpers/chromium.js'
import { createAccount } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import { backends } from '../helpers/database.js'

const PAGE = readFileSync(join(import.meta.dirname, 'passkey-page.html'))
// The browser library as an application would load it: its UMD build, from node_modules.
const BROWSER_LIBRARY = readFileSync(join(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist', 'bundle', 'index.umd.min.js'))

/**
 * The whole ceremony in a real browser: headless Chromium with a virtual authenticator (the
 * DevTools protocol's WebAuthn domain), a page on a second local origin that calls the API
 * with CORS through @simplewebauthn/browser, as an application on another site would.
 */
for (const backend of backends()) {
  t.test(`Chromium (${backend.name}): a page on another origin registers a passkey, signs out, signs in with it and reads /auth/me`, async (t) => {
    // The page's origin: localhost, which browsers count as a secure context, as WebAuthn needs.
    const pages = createServer((request, response) => {
      const path = (request.url ?? '/').split('?')[0]
      if (path === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE)
      else if (path === '/simplewebauthn-browser.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(BROWSER_LIBRARY)
      else response.writeHead(404).end()
    })
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve))
    t.teardown(async () => await new Promise<void>((resolve) => pages.close(() => resolve())))
    const pageOrigin = `http://localhost:${(pages.address() as AddressInfo).port}`

    const app = await build(t, { postgresUrl: backend.url, env: { WEBAUTHN_RP_ID: 'localhost', WEBAUTHN_ORIGINS: pageOrigin, CORS_ORIGINS: pageOrigin } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
    const account = await createAccount(app)

    const context = await (await launchChromium(t)).newContext()
    const page = await context.newPage()
    const devtools = await context.newCDPSession(page)
    await devtools.send('WebAuthn.enable')
    const { authenticatorId } = await devtools.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
    })
    await page.goto(pageOrigin)

    const registered = await page.evaluate(async ([api, token]) => await (window as any).passkeys.register(api, token, 'Chromium'), [api, account.token])
    t.equal(registered.status, 201, 'registered', { body: registered.body })
    t.match(registered.body, { data: { name: 'Chromium', last_used_at: null } })
    const { credentials } = await devtools.send('WebAuthn.getCredentials', { authenticatorId })
    t.equal(credentials.length, 1)
    t.equal(credentials[0]?.isResidentCredential, true, 'a discoverable credential')

    const signedOut = await page.evaluate(
      async ([api, token]) => await (window as any).passkeys.signOut(api, token),
      [api, account.token]
    )
    t.equal(signedOut.status, 204)
    t.equal((await page.evaluate(async ([api, token]) => await (window as any).passkeys.me(api, token), [api, account.token])).status, 401, 'the old token is revoked')

    const signedIn = await page.evaluate(async (api) => await (window as any).passkeys.signIn(api), api)
    t.equal(signedIn.status, 200, 'signed in', { body: signedIn.body })
    t.match(signedIn.body, { data: { token_type: 'Bearer', access_token: String } })
    const me = await page.evaluate(
      async ([api, token]) => await (window as any).passkeys.me(api, token),
      [api, signedIn.body.data.access_token]
    )
    t.equal(me.status, 200)
    t.match(me.body, { data: { id: account.id, email: account.email } })

    await app.auditTrail.flush()
    const logins = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login').where('actor_id', '=', account.id).orderBy('created_at').execute()
    t.same(logins.map((row) => JSON.parse(row.details).method), ['password', 'passkey'])
  })
}
