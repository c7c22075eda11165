import t from 'tap'
import { createAccount, signIn, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'

/** What an operator checks first, through the API (docs/api.md, "Overview"). */

const past = (ms: number) => new Date(Date.now() - ms).toISOString()

for (const backend of backends()) {
  t.test(`overview (${backend.name})`, async (t) => {
    const app = await build(t, { databaseUrl: await freshDatabaseUrl(t, backend.url) })
    const superAdmin = await createAccount(app, { roles: ['super_admin'] })
    const admin = await createAccount(app, { roles: ['admin'] })
    const read = async (token: string) => await app.inject(withToken(token, { method: 'GET', url: '/api/v1/overview' }))
    const overview = async (token: string) => {
      await app.auditTrail.flush()
      return (await read(token)).json().data
    }

    t.test('sign-ins, failures and locked accounts of the last day, as they happen', async (t) => {
      const before = await overview(admin.token)
      t.match(before, {
        sign_ins: { succeeded: Number, failed: Number, second_factor_failed: Number }, locked_accounts: Number
      })
      t.equal(Date.parse(before.at) - Date.parse(before.since), 24 * 60 * 60 * 1000, 'the last day')

      const person = await createAccount(app)
      const locked = await createAccount(app)
      for (let attempt = 0; attempt < 5; attempt++) {
        const refused = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: locked.email, password: 'wrong-password' } })
        t.equal(refused.statusCode, 401)
      }
      await signIn(app, person)
      const after = await overview(admin.token)
      t.equal(after.sign_ins.succeeded, before.sign_ins.succeeded + 3, 'each new account\'s sign-in, and one more')
      t.equal(after.sign_ins.failed, before.sign_ins.failed + 5, 'the refused passwords')
      t.equal(after.locked_accounts, before.locked_accounts + 1, 'the account they locked')

      // A lockout that has ended, and a failure older than a day, count no more.
      await app.database.db.updateTable('lockouts').set({ locked_until: past(1000) }).where('user_id', '=', locked.id).execute()
      await app.database.db.updateTable('audit_logs').set({ created_at: past(25 * 60 * 60 * 1000) })
        .where('event', '=', 'auth.login_failed').where('target_id', '=', locked.id).execute()
      const later = await overview(admin.token)
      t.equal(later.locked_accounts, before.locked_accounts, 'the lock has ended')
      t.equal(later.sign_ins.failed, before.sign_ins.failed, 'the failures are older than a day')
    })

    t.test('the webhooks\' health and the outbox\'s backlog, to holders of admin only', async (t) => {
      const plain = await overview(admin.token)
      t.equal(plain.webhooks, null, 'an admin reads the sign-ins, not the webhooks (a super_admin screen)')
      t.equal(plain.outbox, null)

      const full = await overview(superAdmin.token)
      t.same(full.webhooks, {
        endpoints_disabled: 0, endpoints_retrying: 0, deliveries_retrying: 0, deliveries_overdue: 0
      })
      t.same(full.outbox, { overdue: 0, due_since: null }, 'nothing waiting')

      const dueAt = past(60_000)
      await app.repositories.outbox.add({ channel: 'email', recipient: 'someone@example.com', subject: 'Waiting', text: 'Waiting', html: null }, dueAt)
      t.same((await overview(superAdmin.token)).outbox, { overdue: 1, due_since: dueAt }, 'a message due a minute ago and not delivered')
    })

    t.test('refused to a moderator, a user and a caller without a token', async (t) => {
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const user = await createAccount(app)
      t.equal((await read(moderator.token)).statusCode, 403)
      t.equal((await read(user.token)).statusCode, 403)
      t.equal((await app.inject({ method: 'GET', url: '/api/v1/overview' })).statusCode, 401)
    })
  })
}
