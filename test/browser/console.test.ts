import { mkdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import axe from 'axe-core'
import { generateSync } from 'otplib'
import type { Browser, Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { bulkSeed } from '../../src/store/bulk-seed.js'
import { createAccount, enableTotp, withToken, type Account } from '../helpers/accounts.js'
import { authorizeWithPassword, CookieBrowser, pkceAuthorization, relyingParty, startAuthorizationServer } from '../helpers/authorization-server.js'
import { launchChromium, pageErrors } from '../helpers/chromium.js'
import { givenUpDelivery } from '../helpers/console.js'
import { webhookReceiver } from '../helpers/servers/webhook-receiver.js'

/**
 * The console (docs/console.md) in Chromium: an operator signs in through the authorization
 * server's pages, finds a user by search, ends a session of theirs, resets their second factors,
 * suspends and un-suspends them, and signs out. On every page: no console error (a CSP violation
 * is one), no request to anywhere but the service, and no serious or critical accessibility
 * violation that axe-core finds. With CONSOLE_SCREENSHOTS set to
 * a folder, each screen is saved there (`npm run docs:screenshots` fills docs/console/).
 */

const screenshots = process.env.CONSOLE_SCREENSHOTS

/** axe-core's serious and critical violations on the page: rule, and the first element's selector. */
async function accessibilityProblems (page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axe.source)
  const results = await page.evaluate(async () => await (window as unknown as { axe: typeof axe }).axe.run(document))
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.nodes[0]?.target.join(' ') ?? ''}`)
}

async function checkPage (t: Test, page: Page, errors: string[], name: string): Promise<void> {
  t.same(errors, [], `${name}: no console error, no CSP violation`)
  t.same(await accessibilityProblems(page), [], `${name}: no serious or critical accessibility violation`)
  if (screenshots !== undefined) {
    mkdirSync(screenshots, { recursive: true })
    // The whole page, up to a screen and a half: a long table's rest says nothing more.
    const height = Math.min(await page.evaluate(() => document.documentElement.scrollHeight), 1400)
    await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true, clip: { x: 0, y: 0, width: 1280, height } })
  }
}

/** A new browser profile's page, closed at the test's end; its errors, and what it asks of anywhere else. */
async function watchedPage (t: Test, browser: Browser, issuer: string) {
  const context = await browser.newContext()
  t.teardown(async () => await context.close())
  const page = await context.newPage()
  const errors = pageErrors(page)
  const elsewhere: string[] = []
  page.on('request', (request) => {
    if (!request.url().startsWith(`${issuer}/`)) elsewhere.push(request.url())
  })
  return { context, page, errors, elsewhere }
}

/**
 * Signs in on the authorization server's page the console sent the browser to, with the
 * authenticator app's `code` when given; waits for `landing`.
 */
async function signIn (page: Page, account: Account, landing: string, code?: string): Promise<void> {
  await page.getByLabel('E-mail').fill(account.email)
  await page.getByLabel('Password').fill(account.password)
  if (code !== undefined) {
    await page.getByRole('button', { name: 'Sign in', exact: true }).click()
    await page.getByLabel('Code').fill(code)
    await Promise.all([page.waitForURL(landing), page.getByRole('button', { name: 'Continue' }).click()])
    return
  }
  await Promise.all([page.waitForURL(landing), page.getByRole('button', { name: 'Sign in', exact: true }).click()])
}

t.test('an operator walks the console in Chromium: a user found among 100,000, a session of theirs ended, their second factors reset, suspended and un-suspended; a member\'s role changed in an organization; an application registered; a failed delivery retried; the overview; acting as the user; sign-out', async (t) => {
  const browser = await launchChromium(t)
  const server = await startAuthorizationServer(t, null, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }, 'localhost')
  const { app, issuer } = server
  await bulkSeed(app.database.db, app.database.dialect, 100_000, { posts: false })
  const operator = await createAccount(app, { roles: ['super_admin'], name: 'Ada Operator' })
  // With an authenticator app: acting as a user needs a sign-in with a second factor.
  const { code, backupCodes } = await enableTotp(app, operator)
  const target = await createAccount(app, { name: 'Zelda <b>Findme</b>' })
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: target.email, password: target.password, device: { id: 'phone', name: 'Phone' } } })
  await enableTotp(app, target)
  // A delivery to a receiver on 127.0.0.1, given up.
  const receiver = await webhookReceiver(t)
  const endpoint = await app.inject(withToken(operator.token, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, events: ['user.created'] } }))
  await givenUpDelivery(app, endpoint.json().data.id as string)
  // An organization of the target's, its name an attacker's markup, the target a member.
  const created = await app.inject(withToken(target.token, { method: 'POST', url: '/api/v1/organizations', payload: { name: 'Acme <i>Labs</i>', slug: 'acme-labs' } }))
  const organization = created.json().data as { id: string }
  const colleague = await createAccount(app, { name: 'Max Member' })
  // A member as an accepted invitation makes one (invitations have tests of their own).
  await app.database.db.insertInto('organization_members')
    .values({ organization_id: organization.id, user_id: colleague.id, role: 'member', created_at: new Date().toISOString() }).execute()
  const { context, page, errors, elsewhere } = await watchedPage(t, browser, issuer)

  await page.goto(`${issuer}/console`)
  await checkPage(t, page, errors, 'signed-out')
  await Promise.all([page.waitForURL('**/oidc/interaction/**'), page.getByRole('link', { name: 'Sign in' }).click()])
  await checkPage(t, page, errors, 'sign-in')
  await signIn(page, operator, `${issuer}/console/users`, code(1))
  t.ok(await page.getByText('Signed in as Ada Operator').isVisible(), 'signed in')
  await checkPage(t, page, errors, 'users')

  await page.getByLabel('Search by name').fill('Findme')
  await Promise.all([page.waitForURL('**/console/users?search=Findme'), page.getByLabel('Search by name').press('Enter')])
  const link = page.getByRole('link', { name: 'Zelda <b>Findme</b>' })
  t.ok(await link.isVisible(), 'search finds the user, the name shown as text')
  await Promise.all([page.waitForURL(`**/console/users/${target.id}`), link.click()])
  await checkPage(t, page, errors, 'user')

  await Promise.all([page.waitForURL('**?done=session'), page.getByRole('button', { name: 'End the session of Phone' }).click()])
  t.ok(await page.getByText('The session is ended').isVisible(), 'a session ended')
  t.notOk(await page.getByRole('button', { name: 'End the session of Phone' }).isVisible(), 'and gone from the list')
  const resetForm = page.locator(`form[action="/console/users/${target.id}/mfa/reset"]`)
  await resetForm.getByLabel('Current password').fill(operator.password)
  await resetForm.getByLabel(/^Code from your authenticator app/).fill(backupCodes[0] ?? '')
  await Promise.all([page.waitForURL('**?done=mfa'), page.getByRole('button', { name: 'Reset the second factors' }).click()])
  t.ok(await page.getByText('The second factors are off').isVisible(), 'the second factors reset')
  await checkPage(t, page, errors, 'user-support')

  await page.getByLabel('Reason').fill('Chargeback fraud')
  await Promise.all([page.waitForURL('**?done=suspended'), page.getByRole('button', { name: 'Suspend' }).click()])
  t.ok(await page.getByText('The account is suspended').isVisible(), 'suspended')
  await checkPage(t, page, errors, 'user-suspended')
  await Promise.all([page.waitForURL('**?done=lifted'), page.getByRole('button', { name: 'Lift the suspension' }).click()])
  t.ok(await page.getByText('The suspension is lifted').isVisible(), 'lifted')

  await Promise.all([page.waitForURL('**/console/oauth-clients'), page.getByRole('link', { name: 'Applications' }).click()])
  await checkPage(t, page, errors, 'oauth-clients')
  await page.getByLabel('Name', { exact: true }).fill('Billing Portal')
  await page.getByLabel('Redirect URIs, one per line').fill(`${issuer}/billing/callback`)
  await page.getByRole('button', { name: 'Register' }).click()
  t.ok(await page.getByText('Copy the secret now').isVisible(), 'the secret, shown once')
  await checkPage(t, page, errors, 'oauth-client-created')

  await Promise.all([page.waitForURL('**/console/webhooks'), page.getByRole('link', { name: 'Webhooks' }).click()])
  await Promise.all([page.waitForURL(`**/console/webhooks/${endpoint.json().data.id as string}`), page.getByRole('link', { name: receiver.url }).click()])
  await checkPage(t, page, errors, 'webhook-deliveries')
  await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: /^Retry the delivery/ }).click()])
  t.match(page.url(), /\?done=retried$/, 'the retry is confirmed', { page: await page.locator('main').innerText() })
  await receiver.receivedCount(1)
  t.pass('the retried delivery arrived')

  await Promise.all([page.waitForURL('**/console/audit-log'), page.getByRole('link', { name: 'Audit log' }).click()])
  await checkPage(t, page, errors, 'audit-log')
  await Promise.all([page.waitForURL('**/console/overview'), page.getByRole('link', { name: 'Overview' }).click()])
  t.ok(await page.getByText('Deliveries waiting for a retry', { exact: true }).isVisible(), 'the overview, with the webhooks\' health')
  await checkPage(t, page, errors, 'overview')

  await Promise.all([page.waitForURL('**/console/organizations'), page.getByRole('link', { name: 'Organizations' }).click()])
  await checkPage(t, page, errors, 'organizations')
  await Promise.all([page.waitForURL(`**/console/organizations/${organization.id}`), page.getByRole('link', { name: 'Acme <i>Labs</i>' }).click()])
  await page.getByRole('combobox', { name: 'Role of Max Member' }).selectOption('admin')
  await Promise.all([page.waitForURL('**?done=role'), page.getByRole('button', { name: 'Change the role of Max Member' }).click()])
  t.ok(await page.getByText('The member\'s role is changed.').isVisible(), 'a member\'s role changed')
  await checkPage(t, page, errors, 'organization')

  await page.goto(`${issuer}/console/users/${target.id}`)
  await page.locator(`form[action="/console/users/${target.id}/impersonation"]`).getByLabel('Why you act as them').fill('Ticket 4711: cannot find a setting')
  await Promise.all([page.waitForURL(`${issuer}/account`), page.getByRole('button', { name: 'Act as this user' }).click()])
  t.ok(await page.getByText('Acting as Zelda <b>Findme</b>').isVisible(), 'the person\'s own page, the header saying whose')
  await checkPage(t, page, errors, 'acting')
  await Promise.all([page.waitForURL(`**/console/users/${target.id}`), page.getByRole('button', { name: 'Stop acting' }).click()])
  t.ok(await page.getByText('Signed in as Ada Operator').isVisible(), 'the operator again')

  await page.getByRole('button', { name: 'Sign out' }).click()
  await Promise.all([page.waitForURL(`${issuer}/console`), page.getByRole('button', { name: 'Sign out' }).click()])
  t.ok(await page.getByRole('link', { name: 'Sign in' }).isVisible(), 'signed out, at the console\'s first page')
  const cookies = await context.cookies()
  t.notOk(cookies.some((cookie) => cookie.name === '__Host-console-session'), 'the session cookie is gone')
  t.same(errors, [], 'no console error on the way out')
  t.same(elsewhere, [], 'no request left the service')
})

t.test('a person walks their own page in Chromium: a new password with its proof, an authenticator app set up, a passkey added through a virtual authenticator and proving it is you with it, another session ended, an application revoked, the export downloaded', async (t) => {
  const browser = await launchChromium(t)
  const server = await startAuthorizationServer(t, null, {}, 'localhost')
  const { app, issuer } = server
  const person = await createAccount(app, { name: 'Pat Person' })
  // An application the person allowed, in another browser (its callback is another address of this machine).
  const { redirectUri, config } = await relyingParty(t, server, { name: 'Photo Gallery', grant_types: ['authorization_code'], scopes: ['openid', 'email'] })
  const elsewhereBrowser = new CookieBrowser(issuer)
  await authorizeWithPassword(elsewhereBrowser, (await pkceAuthorization(config, redirectUri, 'openid email')).url.href, person)

  const { context, page, errors, elsewhere } = await watchedPage(t, browser, issuer)
  const devtools = await context.newCDPSession(page)
  await devtools.send('WebAuthn.enable')
  const { authenticatorId } = await devtools.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true }
  })
  await page.goto(`${issuer}/account`)
  await checkPage(t, page, errors, 'account-sign-in')
  await signIn(page, person, `${issuer}/account`)
  await checkPage(t, page, errors, 'account')
  t.ok(await page.getByRole('cell', { name: 'This session' }).isVisible(), 'this session is marked')

  const ends = page.getByRole('button', { name: /^End the session of/ })
  const before = await ends.count()
  t.ok(before >= 1, 'the other sessions can be ended')
  await Promise.all([page.waitForURL('**?done=session'), ends.first().click()])
  t.equal(await page.getByRole('button', { name: /^End the session of/ }).count(), before - 1, 'one session fewer')

  await Promise.all([page.waitForURL('**?done=application'), page.getByRole('button', { name: 'Revoke Photo Gallery' }).click()])
  t.ok(await page.getByText('No application may sign you in.').isVisible(), 'the application is revoked')

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Download everything/ }).click()])
  const exported = JSON.parse(await readFile(await download.path(), 'utf8')) as { data: { user: { email: string } } }
  t.equal(exported.data.user.email, person.email, 'the export is the person\'s')

  await page.locator('form[action="/account/password"]').getByLabel('Current password').fill(person.password)
  await page.getByLabel('New password').fill('a-new-long-passphrase-1')
  // Every session ends with a new password, this one too: the page sends the browser to sign in again.
  await Promise.all([page.waitForURL('**/oidc/interaction/**'), page.getByRole('button', { name: 'Change the password' }).click()])
  await signIn(page, { ...person, password: 'a-new-long-passphrase-1' }, `${issuer}/account`)
  t.ok(await page.getByText('Signed in as Pat Person').isVisible(), 'signed in again with the new password')

  await Promise.all([page.waitForURL('**/account/totp/setup'), page.getByRole('button', { name: 'Set up an authenticator app' }).click()])
  await checkPage(t, page, errors, 'account-totp-setup')
  t.ok(await page.getByRole('img', { name: /^QR code/ }).isVisible(), 'the key as a QR code')
  const key = (await page.locator('main dd code').innerText()).replace(/ /g, '')
  await page.getByLabel('Code from your authenticator app', { exact: true }).fill(generateSync({ secret: key }))
  await page.getByLabel('Current password').fill('a-new-long-passphrase-1')
  await Promise.all([page.waitForURL('**/account/totp/enable'), page.getByRole('button', { name: 'Turn it on' }).click()])
  const backupCodes = await page.locator('main li code').allInnerTexts()
  t.equal(backupCodes.length, 10, 'the backup codes, shown once')
  await checkPage(t, page, errors, 'account-backup-codes')
  await Promise.all([page.waitForURL(`${issuer}/account`), page.getByRole('link', { name: 'Back to your account' }).click()])

  // With a second factor on, a sensitive change asks for a code too: a backup code here.
  await page.getByLabel('Name of the passkey').fill('Work laptop')
  await page.locator('#passkey-form').getByLabel('Current password').fill('a-new-long-passphrase-1')
  await page.locator('#passkey-form').getByLabel(/^Code from your authenticator app, or a backup code/).fill(backupCodes[0] ?? '')
  await Promise.all([page.waitForURL('**?done=passkey'), page.getByRole('button', { name: 'Add a passkey' }).click()])
  t.ok(await page.getByRole('cell', { name: 'Work laptop' }).isVisible(), 'the passkey is listed')
  t.equal((await devtools.send('WebAuthn.getCredentials', { authenticatorId })).credentials.length, 1, 'made by the virtual authenticator')

  await Promise.all([page.waitForURL('**?done=proved'), page.getByRole('button', { name: 'Prove it with a passkey' }).click()])
  t.ok(await page.getByText('You proved it is you').isVisible(), 'proved with the passkey, through the page\'s script')
  await checkPage(t, page, errors, 'account-proved')
  await page.getByLabel('New e-mail address').fill(`moved-${person.email}`)
  await Promise.all([page.waitForURL('**?done=email'), page.getByRole('button', { name: 'Change the address' }).click()])
  t.ok(await page.getByText(`Your address is moved-${person.email}`).isVisible(), 'a sensitive change with no proof on its form, within the 5 minutes')

  t.same(errors, [], 'no console error')
  t.same(elsewhere, [], 'no request left the service')
})
