import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends } from '../../helpers/database.js'
import { mailServer } from '../../helpers/servers/mail-server.js'
import { WebhookReceiver } from '../../helpers/servers/webhook-receiver.js'

/** Deleting one's own account through the API (docs/api.md, "Deleting one's account"). */

const DAY_MS = 24 * 60 * 60 * 1000

/** Every row of every table of the service's database that holds `text`, as `table: row`. */
async function rowsHolding (app: FastifyInstance, text: string): Promise<string[]> {
  const { db } = app.database
  const found: string[] = []
  for (const table of await db.introspection.getTables()) {
    const rows = await db.selectFrom(table.name as 'users').selectAll().execute()
    for (const row of rows) {
      const serialized = JSON.stringify(row)
      if (serialized.toLowerCase().includes(text.toLowerCase())) found.push(`${table.name}: ${serialized}`)
    }
  }
  return found
}

/**
 * An account with something of every kind: sessions, a failed sign-in, a device, a post and a
 * comment, an invitation to its address.
 */
async function accountWithData (app: FastifyInstance): Promise<Account> {
  const account = await createAccount(app, { reauthenticated: false })
  const other = await createAccount(app)
  const inject = async (token: string, method: 'POST' | 'PATCH', url: string, payload: object) => {
    const answer = await app.inject(withToken(token, { method, url, payload }))
    if (answer.statusCode >= 300) throw new Error(`${method} ${url}: ${answer.body}`)
    return answer.json().data
  }
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: 'not-the-password' } })
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
  await inject(account.token, 'POST', `/api/v1/users/${account.id}/devices`, { device_id: 'laptop-1', name: 'Laptop' })
  const post = await inject(account.token, 'POST', '/api/v1/posts', { title: 'Mine', body: 'Written by the account', status: 'published' })
  await inject(account.token, 'POST', `/api/v1/posts/${post.id}/comments`, { body: 'A comment of mine' })
  const othersPost = await inject(other.token, 'POST', '/api/v1/posts', { title: 'Theirs', body: 'Written by another', status: 'published' })
  await inject(account.token, 'POST', `/api/v1/posts/${othersPost.id}/comments`, { body: 'My comment on theirs' })
  const organization = await inject(other.token, 'POST', '/api/v1/organizations', { name: 'Other Org', slug: `other-${account.id.slice(-8)}` })
  await inject(other.token, 'POST', `/api/v1/organizations/${organization.id}/invitations`, { email: account.email, role: 'member' })
  return account
}

for (const backend of backends()) {
  t.test(`account deletion (${backend.name})`, async (t) => {
    t.test('DELETE /users/me needs a proof, then no row of any table holds the address; audit entries keep the id only', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const account = await accountWithData(app)
      t.ok((await rowsHolding(app, account.email)).length > 3, 'the address is in several tables before')

      const unproved = await app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/users/me' }))
      t.equal(unproved.statusCode, 403)
      t.equal(unproved.json().error.code, 'REAUTHENTICATION_REQUIRED', 'a sensitive change: the token alone is not enough')
      const deleted = await app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/users/me', payload: { current_password: account.password } }))
      t.equal(deleted.statusCode, 204)

      const notice = await smtp.next((mail) => mail.to.includes(account.email) && mail.subject === 'Your account was deleted')
      t.ok(notice, 'the address is told')
      t.ok(await msUntil(async () => (await rowsHolding(app, account.email)).length === 0, 5000) < 5000, 'no row holds the address once the notice is sent')
      t.same(await rowsHolding(app, account.email), [])

      await app.auditTrail.flush()
      const { db } = app.database
      const entries = await db.selectFrom('audit_logs').selectAll().where((eb) => eb.or([eb('actor_id', '=', account.id), eb('target_id', '=', account.id)])).execute()
      t.ok(entries.length >= 4, 'the entries about the account are kept')
      t.ok(entries.some((entry) => entry.event === 'user.created' && entry.details.includes('[erased]')), 'its registration, without the address')
      t.ok(entries.some((entry) => entry.event === 'user.deleted'), 'and its deletion')
      t.same(entries.filter((entry) => entry.event !== 'user.deleted' && (entry.ip !== null || entry.user_agent !== null)), [], 'without client address or user agent')
      for (const table of ['sessions', 'posts', 'comments', 'trusted_devices', 'organization_members'] as const) {
        const column = table === 'posts' || table === 'comments' ? 'author_id' : 'user_id'
        const left = await db.selectFrom(table as 'sessions').selectAll().where(column as 'user_id', '=', account.id).execute()
        t.same(left, [], `no ${table} left`)
      }
      const me = await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 401, 'its token no longer works')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
      t.equal(login.statusCode, 401)
    })

    t.test('with the audit log streamed to webhooks, the deliveries waiting at the erasure, and the outbox, keep no trace of the account', async (t) => {
      const smtp = await mailServer(t)
      // A receiver that refuses every delivery: they wait to be tried again, as they would behind an outage.
      const receiver = await new WebhookReceiver({ answer: () => 503 }).start()
      t.teardown(async () => { await receiver.stop() })
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), AUDIT_STREAM: 'webhooks', WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' } })
      const operator = await createAccount(app, { roles: ['super_admin'] })
      const hook = await app.inject(withToken(operator.token, { method: 'POST', url: '/api/v1/webhooks', payload: { url: receiver.url, events: ['audit.entry'] } }))
      t.equal(hook.statusCode, 201)
      const account = await accountWithData(app)
      await app.auditTrail.flush()
      const { db } = app.database
      const holding = async () => (await rowsHolding(app, account.email)).filter((row) => row.startsWith('webhook_deliveries'))
      t.ok((await holding()).length > 0, 'deliveries carry the address before')
      const deleted = await app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/users/me', payload: { current_password: account.password } }))
      t.equal(deleted.statusCode, 204)
      await smtp.next((mail) => mail.to.includes(account.email) && mail.subject === 'Your account was deleted')
      t.ok(await msUntil(async () => (await rowsHolding(app, account.email)).length === 0, 5000) < 5000, 'no row holds the address: deliveries and outbox included')
      const pending = await db.selectFrom('webhook_deliveries').select('payload').where('status', '=', 'pending').execute()
      type AuditEntryData = Record<'event' | 'actor_id' | 'target_id' | 'ip' | 'user_agent', string | null>
      const aboutIt = pending.map((row) => JSON.parse(row.payload) as { data: AuditEntryData })
        .filter(({ data }) => data.actor_id === account.id || data.target_id === account.id)
      t.ok(aboutIt.length > 0, 'the deliveries about the account are still to be sent')
      // The deletion's own entry keeps its request's address, as the audit log does (docs/security.md).
      const scrubbed = aboutIt.filter(({ data }) => data.event !== 'user.deleted')
      t.ok(scrubbed.length > 0, 'entries written before the deletion are among them')
      t.same(scrubbed.filter(({ data }) => data.ip !== null || data.user_agent !== null), [], 'without its client address or user agent')
    })

    t.test('with ACCOUNT_DELETION_GRACE_DAYS the account is suspended at once and erased when due; an administrator lifting the suspension keeps it', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { ACCOUNT_DELETION_GRACE_DAYS: '7' } })
      const leaving = await createAccount(app)
      const staying = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })

      const scheduled = await app.inject(withToken(leaving.token, { method: 'DELETE', url: '/api/v1/users/me', payload: { current_password: leaving.password } }))
      t.equal(scheduled.statusCode, 202)
      const due = Date.parse(scheduled.json().data.deletion_due_at)
      t.ok(Math.abs(due - (Date.now() + 7 * DAY_MS)) < 60_000, 'due in 7 days')
      t.equal((await app.inject(withToken(leaving.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401, 'its sessions ended')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: leaving.email, password: leaving.password } })
      t.equal(login.statusCode, 403)
      t.equal(login.json().error.code, 'ACCOUNT_SUSPENDED', 'no sign-in meanwhile')

      const kept = await app.inject(withToken(staying.token, { method: 'DELETE', url: '/api/v1/users/me', payload: { current_password: staying.password } }))
      t.equal(kept.statusCode, 202)
      const lifted = await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${staying.id}/suspension` }))
      t.equal(lifted.statusCode, 204)

      t.equal(await app.services.accountDeletion.eraseDue(Date.now() + DAY_MS), 0, 'nothing due before the end of the grace period')
      t.equal(await app.services.accountDeletion.eraseDue(Date.now() + 8 * DAY_MS), 1, 'then the one still scheduled is erased')
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${leaving.id}` }))).statusCode, 404)
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${staying.id}` }))).statusCode, 200, 'the cancelled one is kept')
      const back = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: staying.email, password: staying.password } })
      t.equal(back.statusCode, 200, 'and signs in again')
    })
  })
}
