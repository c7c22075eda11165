import t from 'tap'
import { type Account, createAccount } from '../../helpers/accounts.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'
import { insertChunked } from '../../helpers/query-plans.js'

/** The console's overview screen (docs/console.md): what an operator checks first. */

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server

    async function overviewOf (account: Account) {
      const { browser } = await signedInBrowser(issuer, account)
      await app.auditTrail.flush()
      const { response } = await browser.follow('/console/overview')
      return { status: response.status, html: await response.text() }
    }

    t.test('an admin reads the last day\'s sign-ins, each linked to its entries; the webhooks are a super_admin\'s', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const refused = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: admin.email, password: 'not-the-password' } })
      t.equal(refused.statusCode, 401)
      const page = await overviewOf(admin)
      t.equal(page.status, 200)
      t.match(page.html, '<a href="/console/overview">Overview</a>', 'in the header')
      t.match(page.html, /<dt>Sign-ins<\/dt><dd><a href="\/console\/audit-log\?event=auth.login">[1-9]\d*<\/a><\/dd>/)
      t.match(page.html, /<dt>Refused passwords and sign-in codes<\/dt><dd><a href="\/console\/audit-log\?event=auth.login_failed">[1-9]\d*<\/a>/)
      t.match(page.html, '<dt>Accounts locked now</dt>')
      t.notMatch(page.html, 'Deliveries waiting for a retry', 'no webhooks for an admin')

      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const full = await overviewOf(superAdmin)
      t.match(full.html, '<dt>Deliveries waiting for a retry</dt><dd>0</dd>')
      t.match(full.html, '<dt>Messages due and not delivered yet</dt>')
    })

    t.test('a count at its cap says "or more"', async (t) => {
      const at = new Date().toISOString()
      await insertChunked(app.database.db, 'audit_logs', Array.from({ length: 10_000 }, (_, index) => ({
        id: `00000000-0000-7000-8009-${String(index).padStart(12, '0')}`,
        event: 'auth.mfa_failed',
        actor_id: null,
        target_id: null,
        ip: '203.0.113.9',
        user_agent: null,
        outcome: 'failure',
        details: '{}',
        created_at: at
      })))
      const page = await overviewOf(await createAccount(app, { roles: ['admin'] }))
      t.match(page.html, '<dt>Refused second factors</dt><dd><a href="/console/audit-log?event=auth.mfa_failed">10000 or more</a></dd>')
    })

    t.test('a moderator is refused the overview, and not offered it', async (t) => {
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const page = await overviewOf(moderator)
      t.equal(page.status, 403)
      const { browser } = await signedInBrowser(issuer, moderator)
      const users = await (await browser.follow('/console/users')).response.text()
      t.notMatch(users, 'href="/console/overview"')
    })
  })
}
