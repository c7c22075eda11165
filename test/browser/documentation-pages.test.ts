import type { AddressInfo } from 'node:net'
import type { Page } from 'playwright-core'
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
    // Swagger UI renders a long document's operations as they scroll into view: each is opened by
    // its deep link (`#/<tag>/<operationId>`), which scrolls to it and expands it, as a reader's link would.
    async function execute (method: string, path: string, deepLink: string): Promise<string> {
      // A new load each time: Swagger UI reads the deep link when it starts.
      await page.goto('about:blank')
      await page.goto(`${origin}/api/docs#/${deepLink}`)
      const operation = page.locator(`.opblock-${method}`, { has: page.locator(`.opblock-summary-path[data-path="${path}"]`) })
      await operation.locator('.try-out__btn').click()
      await operation.locator('.execute').click()
      const status = operation.locator('.live-responses-table .response .response-col_status')
      await status.first().waitFor()
      return (await status.first().innerText()).trim()
    }
    t.equal(await execute('post', '/api/v1/users', 'users/users.create'), '201', 'POST /api/v1/users with the example body: 201')
    t.equal(await execute('post', '/api/v1/auth/login', 'auth/auth.login'), '200', 'POST /api/v1/auth/login with the example body: 200')
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
