import type { AddressInfo } from 'node:net'
import type { Locator, Page } from 'playwright-core'
import t from 'tap'
import { launchChromium } from '../helpers/chromium.js'
import { build } from '../helpers/app.js'

/**
 * Everything a page tried that a new user would see go wrong: console errors, CSP violations,
 * and requests for anything not served by the service (aborted: nothing leaves this machine).
 */
function watch (page: Page, origin: string): string[] {
  const problems: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`) })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  void page.exposeFunction('reportViolation', (text: string) => problems.push(`CSP: ${text}`))
  void page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      void (window as unknown as { reportViolation: (text: string) => void }).reportViolation(`${event.violatedDirective} blocked ${event.blockedURI}`)
    })
  })
  void page.route('**/*', async (route) => {
    const url = route.request().url()
    if (url.startsWith(`${origin}/`) || url.startsWith('blob:') || url.startsWith('data:')) return await route.continue()
    problems.push(`outside request: ${url}`)
    await route.abort()
  })
  return problems
}

t.test('the documentation pages work in a browser: no error, no CSP violation, nothing fetched from outside', async (t) => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const browser = await launchChromium(t)

  t.test('Swagger UI: sign up, then sign in, with "Try it out" as shown', async (t) => {
    const page = await (await browser.newContext()).newPage()
    // The page builds the whole document's operations in the browser before the linked one can be
    // opened: on a busy two-core host that once took over Playwright's 30 s. What is tested here is
    // that the steps work, not how fast.
    page.setDefaultTimeout(90_000)
    const problems = watch(page, origin)
    const operation = (method: string, path: string): Locator =>
      page.locator(`.opblock-${method}`, { has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
    async function execute (opened: Locator): Promise<string> {
      await opened.locator('.try-out__btn').click()
      await opened.locator('.execute').click()
      const status = opened.locator('.live-responses-table .response .response-col_status')
      await status.first().waitFor()
      return (await status.first().innerText()).trim()
    }
    // The sign-up opened by its deep link (`#/<tag>/<operationId>`), as a reader's link would.
    await page.goto(`${origin}/api/docs#/users/users.create`)
    t.equal(await execute(operation('post', '/api/v1/users')), '201', 'POST /api/v1/users with the example body: 201')
    // The sign-in further down: Swagger UI renders a long document's operations as they scroll
    // into view, so the reader scrolls to it and opens it (one page load for both).
    const signIn = operation('post', '/api/v1/auth/login')
    for (let turn = 0; turn < 100 && await signIn.count() === 0; turn++) await page.mouse.wheel(0, 300)
    await signIn.locator('.opblock-summary-control').click()
    t.equal(await execute(signIn), '200', 'POST /api/v1/auth/login with the example body: 200')
    t.same(problems, [], 'no console error, CSP violation or outside request')
  })

  t.test('ReDoc: the page renders and its search finds the sign-in operations', async (t) => {
    const page = await (await browser.newContext()).newPage()
    const problems = watch(page, origin)
    await page.goto(`${origin}/api/redoc`)
    const search = page.locator('input[placeholder="Search..."]')
    await search.waitFor()
    await search.fill('login')
    const results = page.locator('[data-role="search:results"] > li')
    await results.first().waitFor({ timeout: 10_000 })
    const found = await results.allInnerTexts()
    t.ok(found.some((text) => /Sign in with e-mail and password/.test(text)), `the search finds the sign-in: ${found.join(' | ')}`)
    const operations = await page.locator('[role="menu"] [role="menuitem"]').count()
    t.ok(found.length < operations / 2, `and filters: ${found.length} results of ${operations} entries`)
    t.same(problems, [], 'no console error, CSP violation or outside request')
  })
})
