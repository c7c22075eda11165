import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import axe from 'axe-core'
import type { Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { createAccount } from '../helpers/accounts.js'
import { startAuthorizationServer } from '../helpers/authorization-server.js'
import { launchChromium } from '../helpers/chromium.js'

/**
 * The console (docs/console.md) in Chromium: an operator signs in through the authorization
 * server's pages, finds a user by search, suspends and un-suspends them, and signs out. On every
 * page: no console error (a CSP violation is one), no request to anywhere but the service, and no
 * serious or critical accessibility violation that axe-core finds. With CONSOLE_SCREENSHOTS set to
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
    await page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true })
  }
}

t.test('an operator walks the console in Chromium: sign-in, search, suspension and its lifting, sign-out', async (t) => {
  const browser = await launchChromium(t)
  const server = await startAuthorizationServer(t, null, {}, 'localhost')
  const { app, issuer } = server
  const operator = await createAccount(app, { roles: ['admin'], name: 'Ada Operator' })
  for (const name of ['Grace Hopper', 'Alan Turing', 'Barbara Liskov']) await createAccount(app, { name })
  const target = await createAccount(app, { name: 'Zelda <b>Findme</b>' })

  const context = await browser.newContext()
  t.teardown(async () => await context.close())
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) errors.push(message.text())
  })
  page.on('pageerror', (error) => { errors.push(error.message) })
  const elsewhere: string[] = []
  page.on('request', (request) => {
    if (!request.url().startsWith(`${issuer}/`)) elsewhere.push(request.url())
  })

  await page.goto(`${issuer}/console`)
  await checkPage(t, page, errors, 'signed-out')
  await Promise.all([page.waitForURL('**/oidc/interaction/**'), page.getByRole('link', { name: 'Sign in' }).click()])
  await checkPage(t, page, errors, 'sign-in')
  await page.getByLabel('E-mail').fill(operator.email)
  await page.getByLabel('Password').fill(operator.password)
  await Promise.all([page.waitForURL(`${issuer}/console/users`), page.getByRole('button', { name: 'Sign in', exact: true }).click()])
  t.ok(await page.getByText('Signed in as Ada Operator').isVisible(), 'signed in')
  await checkPage(t, page, errors, 'users')

  await page.getByLabel('Search by name').fill('Findme')
  await Promise.all([page.waitForURL('**/console/users?search=Findme'), page.getByLabel('Search by name').press('Enter')])
  const link = page.getByRole('link', { name: 'Zelda <b>Findme</b>' })
  t.ok(await link.isVisible(), 'search finds the user, the name shown as text')
  await Promise.all([page.waitForURL(`**/console/users/${target.id}`), link.click()])
  await checkPage(t, page, errors, 'user')

  await page.getByLabel('Reason').fill('Chargeback fraud')
  await Promise.all([page.waitForURL('**?done=suspended'), page.getByRole('button', { name: 'Suspend' }).click()])
  t.ok(await page.getByText('The account is suspended').isVisible(), 'suspended')
  await checkPage(t, page, errors, 'user-suspended')
  await Promise.all([page.waitForURL('**?done=lifted'), page.getByRole('button', { name: 'Lift the suspension' }).click()])
  t.ok(await page.getByText('The suspension is lifted').isVisible(), 'lifted')

  await page.getByRole('button', { name: 'Sign out' }).click()
  await Promise.all([page.waitForURL(`${issuer}/console`), page.getByRole('button', { name: 'Sign out' }).click()])
  t.ok(await page.getByRole('link', { name: 'Sign in' }).isVisible(), 'signed out, at the console\'s first page')
  const cookies = await context.cookies()
  t.notOk(cookies.some((cookie) => cookie.name === '__Host-console-session'), 'the session cookie is gone')
  t.same(errors, [], 'no console error on the way out')
  t.same(elsewhere, [], 'no request left the service')
})
