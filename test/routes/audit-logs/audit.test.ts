import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { auditRow, backends, freshDatabaseUrl } from '../../helpers/database.js'

async function auditLog (app: FastifyInstance, admin: Account, query = 'limit=100') {
  const response = await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/audit-logs?${query}` }))
  if (response.statusCode !== 200) throw new Error(response.body)
  return response.json() as { data: Array<Record<string, any>>, meta: Record<string, unknown> }
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('every security event is recorded, without a single secret', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['super_admin'] })
      const user = await createAccount(app)
      const secrets = [admin.password, user.password, admin.token, user.token]
      const inject = async (caller: Account | null, options: InjectOptions) => {
        const response = await app.inject(caller === null ? options : withToken(caller.token, options))
        for (const field of ['access_token', 'refresh_token'] as const) {
          const value = response.statusCode === 200 ? response.json()?.data?.[field] : undefined
          if (typeof value === 'string') secrets.push(value)
        }
        return response
      }
      await inject(null, { method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: 'wrong-password' } })
      await inject(null, { method: 'POST', url: '/api/v1/auth/login', payload: { email: 'ghost@example.com', password: 'wrong-password' } })
      const pair = (await inject(null, { method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })).json().data
      const refresh = async (token: string) => (await inject(null, { method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })).json().data
      const rotated = await refresh(pair.refresh_token)
      await refresh(pair.refresh_token) // a retry, answered the same pair
      const next = await refresh(rotated.refresh_token)
      await refresh(pair.refresh_token)
      t.equal((await inject(null, { method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${String(next.access_token)}` } })).statusCode, 401,
        'the reuse ended the session and its access tokens')
      const fresh = (await inject(null, { method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })).json().data
      await inject(null, { method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${String(fresh.access_token)}` } })
      await inject(user, { method: 'PATCH', url: `/api/v1/users/${user.id}`, payload: { password: 'a-new-password', current_password: user.password } })
      secrets.push('a-new-password')
      await inject(admin, { method: 'PUT', url: `/api/v1/users/${user.id}/roles/moderator` })
      await inject(admin, { method: 'DELETE', url: `/api/v1/users/${user.id}/roles/moderator` })
      await inject(admin, { method: 'POST', url: `/api/v1/users/${admin.id}/devices`, payload: { device_id: 'laptop', name: 'Laptop' } })
      await inject(admin, { method: 'DELETE', url: `/api/v1/users/${admin.id}/devices/laptop` })
      await inject(admin, { method: 'POST', url: '/api/v1/security/access-check', payload: { client_ip: '10.0.0.1' } })
      await inject(admin, { method: 'DELETE', url: `/api/v1/users/${user.id}` })

      const { data } = await auditLog(app, admin)
      const events = new Set(data.map((entry) => entry.event))
      for (const event of ['user.created', 'auth.login', 'auth.login_failed', 'auth.refresh', 'auth.token_reused', 'auth.logout',
        'user.updated', 'role.assigned', 'role.removed', 'device.added', 'device.removed', 'access.evaluated', 'user.deleted']) {
        t.ok(events.has(event), event)
      }
      t.equal(data.filter((entry) => entry.event === 'auth.refresh' && entry.details.retry === true).length, 1, 'the retry, as one')
      const failures = data.filter((entry) => entry.event === 'auth.login_failed').map((entry) => entry.details.reason).sort()
      t.same(failures, ['unknown_email', 'wrong_password'])
      const login = data.find((entry) => entry.event === 'auth.login' && entry.actor_id === user.id)
      t.match(login, { outcome: 'success', target_id: user.id })
      t.equal(login?.ip, null, 'the deleted account\'s entries keep its id, not its client address')
      const adminLogin = data.find((entry) => entry.event === 'auth.login' && entry.actor_id === admin.id)
      t.match(adminLogin, { outcome: 'success', ip: '127.0.0.1', target_id: admin.id })
      const deleted = data.find((entry) => entry.event === 'user.deleted')
      t.match(deleted, { actor_id: admin.id, target_id: user.id })
      t.same(Object.keys(data[0] ?? {}).sort(), ['actor_id', 'created_at', 'details', 'event', 'id', 'ip', 'outcome', 'target_id', 'user_agent'])
      const text = JSON.stringify(data)
      for (const secret of secrets) t.notOk(text.includes(secret), 'no secret in the audit log')
      t.notMatch(text, /pbkdf2-sha256/)
    })

    t.test('GET /audit-logs: permission, filters, newest first, pagination', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const refused = await app.inject(withToken(user.token, { method: 'GET', url: '/api/v1/audit-logs' }))
      t.equal(refused.statusCode, 403)
      t.equal(refused.json().error.message, 'Permission denied. Requires: view_audit_logs')

      const created = await auditLog(app, admin, 'event=user.created')
      t.ok(created.data.length >= 2)
      t.ok(created.data.every((entry) => entry.event === 'user.created'))
      const mine = await auditLog(app, admin, `actor_id=${user.id}`)
      t.ok(mine.data.length > 0)
      t.ok(mine.data.every((entry) => entry.actor_id === user.id))
      const spelledInUpperCase = await auditLog(app, admin, `actor_id=${user.id.toUpperCase()}`)
      t.same(spelledInUpperCase.data, mine.data, 'the actor id in upper case finds the same entries')
      const all = (await auditLog(app, admin)).data
      const times = all.map((entry) => entry.created_at)
      t.same(times, [...times].sort().reverse(), 'newest first')
      const later = await auditLog(app, admin, `createdAfter=${encodeURIComponent(String(times.at(-1)))}&limit=100`)
      const oldest = String(times.at(-1))
      t.ok(later.data.every((entry) => entry.created_at > oldest), 'createdAfter is strict')
      t.notOk(later.data.some((entry) => entry.created_at === oldest))
      const page = await auditLog(app, admin, 'limit=1&cursor=')
      t.equal(page.data.length, 1)
      t.equal(page.meta.hasMore, true)
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: '/api/v1/audit-logs?event=nope' }))).statusCode, 400)
    })

    t.test('entries past AUDIT_RETENTION_DAYS are purged in the background after start-up; nothing queued is lost at close', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const first = await build(t, { databaseUrl, env: { AUDIT_RETENTION_DAYS: '30' } })
      const [old, recent] = [auditRow(0, 31), auditRow(1, 29)]
      await first.repositories.auditLogs.insertMany([old, recent])
      first.auditTrail.record({ event: 'auth.logout', outcome: 'success', details: { note: 'queued at close' } })
      await first.close()

      const second = await build(t, { databaseUrl, env: { AUDIT_RETENTION_DAYS: '30' } })
      // Start-up does not wait for the purge: it runs in the background, joined here.
      await second.services.auditRetention.purge()
      const rows = await second.database.db.selectFrom('audit_logs').select(['created_at', 'event']).execute()
      t.notOk(rows.some((row) => row.created_at === old.created_at), 'the 31-day-old entry is gone')
      t.ok(rows.some((row) => row.created_at === recent.created_at), 'the 29-day-old entry stays')
      t.ok(rows.some((row) => row.event === 'auth.logout'), 'the entry queued at close was written')
    })
  })
}
