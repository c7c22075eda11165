import t from 'tap'
import { createAccount, withToken, type Account } from '../../helpers/accounts.js'
import type { CookieBrowser } from '../../helpers/authorization-server.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { givenUpDelivery, pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'
import { webhookReceiver } from '../../helpers/servers/webhook-receiver.js'

/** The console's super_admin-only screens and the audit log, through their forms (docs/console.md). */
for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' })
    const { app, issuer, admin: superAdmin } = server

    const signedIn = async (account: Account) => (await signedInBrowser(issuer, account)).browser
    async function page (browser: CookieBrowser, url: string) {
      const { response } = await browser.follow(url)
      return { status: response.status, html: await response.text() }
    }

    t.test('a super_admin registers an application: its secret is shown once; rotating shows a new one', async (t) => {
      const browser = await signedIn(superAdmin)
      const list = await page(browser, '/console/oauth-clients')
      t.equal(list.status, 200)
      const created = await browser.request('/console/oauth-clients', {
        form: { _csrf: pageToken(list.html), name: 'Billing <Portal>', confidential: 'on', redirect_uris: 'https://billing.example.com/callback\r\n', grant_types: 'authorization_code', scopes: 'openid email' }
      })
      t.equal(created.status, 201)
      const html = await created.text()
      const secret = /<dt>Client secret<\/dt><dd><code>([^<]+)<\/code>/.exec(html)?.[1]
      const id = /<dt>Client id<\/dt><dd><code>([^<]+)<\/code>/.exec(html)?.[1] ?? ''
      t.equal(secret?.length, 43, 'the secret, shown')
      t.match(html, 'Billing &lt;Portal&gt;')
      const client = await app.inject(withToken(superAdmin.token, { method: 'GET', url: `/api/v1/oauth-clients/${id}` }))
      t.match(client.json().data, { name: 'Billing <Portal>', confidential: true, redirect_uris: ['https://billing.example.com/callback'], grant_types: ['authorization_code'] })
      const shown = await page(browser, `/console/oauth-clients/${id}`)
      t.notMatch(shown.html, secret ?? 'no secret', 'never shown again')
      const rotated = await browser.request(`/console/oauth-clients/${id}/secret`, { form: { _csrf: pageToken(shown.html) } })
      const again = /<dt>Client secret<\/dt><dd><code>([^<]+)<\/code>/.exec(await rotated.text())?.[1]
      t.ok(again !== undefined && again !== secret, 'a new secret')
      const refused = await browser.request('/console/oauth-clients', {
        form: { _csrf: pageToken(list.html), name: 'Bad', redirect_uris: 'javascript:alert(1)', grant_types: 'authorization_code', scopes: 'openid' }
      })
      t.equal(refused.status, 400, 'the API\'s own rules: no such redirect URI')
    })

    t.test('a failed webhook delivery is retried from its endpoint\'s page and arrives', async (t) => {
      const receiver = await webhookReceiver(t)
      const created = await app.inject(withToken(superAdmin.token, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, events: ['user.created'] } }))
      const endpointId: string = created.json().data.id
      const deliveryId = await givenUpDelivery(app, endpointId)
      const browser = await signedIn(superAdmin)
      const endpoint = await page(browser, `/console/webhooks/${endpointId}`)
      t.match(endpoint.html, 'failed')
      t.match(endpoint.html, 'answered 500')
      const retried = await browser.follow(`/console/webhooks/${endpointId}/deliveries/${deliveryId}/retry`, { form: { _csrf: pageToken(endpoint.html) } })
      t.match(await retried.response.text(), 'The delivery is queued again')
      await receiver.receivedCount(1)
      t.equal(receiver.received[0]?.headers['webhook-id'], deliveryId, 'the same delivery, sent again')
    })

    t.test('an admin is refused the super_admin-only screens; the audit log shows what an attacker wrote as text', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const browser = await signedIn(admin)
      for (const url of ['/console/oauth-clients', '/console/webhooks']) {
        const refused = await page(browser, url)
        t.equal(refused.status, 403, `${url}: refused`)
        t.match(refused.html, 'Not allowed')
      }
      const users = await page(browser, '/console/users')
      t.notMatch(users.html, 'href="/console/webhooks"', 'not offered in the header either')
      await app.inject({
        method: 'POST', url: '/api/v1/auth/login', headers: { 'user-agent': '<script>alert("ua")</script>' }, payload: { email: 'nobody@example.com', password: 'x' }
      })
      const victim = await createAccount(app)
      const suspended = await app.inject(withToken(admin.token, {
        method: 'POST', url: `/api/v1/users/${victim.id}/suspension`, payload: { reason: '<img src=x onerror=alert(1)>' }
      }))
      t.equal(suspended.statusCode, 200)
      const log = await page(browser, '/console/audit-log?event=auth.login_failed')
      t.equal(log.status, 200)
      t.notMatch(log.html, '<script>alert', 'the user agent, escaped')
      t.match(log.html, '&lt;script&gt;alert(&quot;ua&quot;)&lt;/script&gt;')
      const reasons = await page(browser, `/console/audit-log?event=user.suspended&actor_id=${admin.id}`)
      t.notMatch(reasons.html, '<img src=x', 'the details, escaped')
      t.match(reasons.html, '&lt;img src=x onerror=alert(1)&gt;')
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const moderatorLog = await page(await signedIn(moderator), '/console/audit-log')
      t.equal(moderatorLog.status, 403, 'the audit log needs view_audit_logs')
    })
  })
}
