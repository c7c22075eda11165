import t from 'tap'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { startService } from '../../helpers/process.js'

const ADMIN = { email: 'durable-admin@example.com', password: 'durable-admin-password' }

async function call (base: string, method: string, path: string, body?: unknown, token?: string) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token !== undefined && { authorization: `Bearer ${token}` }) },
    ...(body !== undefined && { body: JSON.stringify(body) })
  })
  return { status: response.status, json: await response.json().catch(() => null) as any }
}

for (const backend of backends()) {
  t.test(`audit entries are stored before the answer (${backend.name})`, async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const service = await startService(t, {
      DATABASE_URL: databaseUrl,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      MFA_REQUIRED_ROLES: 'none',
      EMAIL_VERIFICATION: 'off'
    })
    const { base } = service
    const admin = (await call(base, 'POST', '/api/v1/auth/login', ADMIN)).json.data.access_token as string
    const created = await call(base, 'POST', '/api/v1/users', { email: 'durable@example.com', name: 'Durable', password: TEST_PASSWORD })
    t.equal(created.status, 201)
    const userId = created.json.data.id as string

    const assigned = await call(base, 'PUT', `/api/v1/users/${userId}/roles/moderator`, undefined, admin)
    t.equal(assigned.status, 200)
    const listed = await call(base, 'GET', `/api/v1/audit-logs?event=role.assigned&actor_id=${(await call(base, 'GET', '/api/v1/auth/me', undefined, admin)).json.data.id as string}`, undefined, admin)
    t.match(listed.json.data, [{ event: 'role.assigned', target_id: userId }], 'the action is in the audit log as soon as it is answered')

    // The last acknowledged change, then no chance to write anything more.
    const deleted = await call(base, 'DELETE', `/api/v1/users/${userId}`, undefined, admin)
    t.equal(deleted.status, 204)
    service.child.kill('SIGKILL')
    t.equal(await service.exited, null, 'killed, not stopped')

    const after = await build(t, { databaseUrl })
    const entries = await after.database.db.selectFrom('audit_logs').select(['event', 'target_id']).where('target_id', '=', userId).orderBy('created_at').execute()
    t.same(entries.map((entry) => entry.event), ['user.created', 'role.assigned', 'user.deleted'], 'every acknowledged change has its entry after the kill')
  })
}
