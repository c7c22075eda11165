import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

function accessCheck (app: FastifyInstance, caller: Account, payload: Record<string, unknown>) {
  return app.inject(withToken(caller.token, { method: 'POST', url: '/api/v1/security/access-check', payload }))
}

function addDevice (app: FastifyInstance, caller: Account, userId: string, deviceId: string) {
  return app.inject(withToken(caller.token, { method: 'POST', url: `/api/v1/users/${userId}/devices`, payload: { device_id: deviceId, name: `Device ${deviceId}` } }))
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('access-check answers with the user\'s devices and anomalies', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const user = await createAccount(app)
      const noon = '2026-11-22T12:00:00Z'
      const unknown = await accessCheck(app, user, { user_id: user.id, device_id: 'phone', client_ip: '192.168.1.20', timestamp: noon })
      t.equal(unknown.statusCode, 200)
      t.same(unknown.json().data, {
        allowed: false,
        risk_score: 20,
        factors: [
          { trusted: false, risk: 20, reason: 'Unknown device' },
          { trusted: true, risk: 0, reason: 'Trusted network' },
          { trusted: true, risk: 0, reason: 'No anomalies detected' },
          { trusted: true, risk: 0, reason: 'Access during usual hours (UTC)' }
        ]
      })
      t.equal((await addDevice(app, user, user.id, 'phone')).statusCode, 201)
      const trusted = (await accessCheck(app, user, { user_id: user.id, device_id: 'phone', client_ip: '192.168.1.20', timestamp: noon })).json().data
      t.same([trusted.allowed, trusted.risk_score], [true, 0])

      for (let n = 0; n < 3; n++) {
        await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: 'wrong-password' } })
      }
      const suspicious = (await accessCheck(app, user, { user_id: user.id, device_id: 'phone', client_ip: '8.8.8.8', timestamp: noon })).json().data
      t.same(suspicious.factors[2], { trusted: false, risk: 10, reason: '1 anomaly detected' }, '3 failed sign-ins in 15 minutes')
      t.same([suspicious.risk_score, suspicious.allowed], [25, false])
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: user.password } })).statusCode, 200)
      const afterSuccess = (await accessCheck(app, user, { user_id: user.id, device_id: 'phone', client_ip: '8.8.8.8', timestamp: noon })).json().data
      t.same(afterSuccess.factors[2], { trusted: false, risk: 10, reason: '1 anomaly detected' }, 'a successful sign-in does not erase the failures before it')

      const bare = (await accessCheck(app, user, {})).json().data
      t.same(bare.factors.slice(0, 2).map((factor: { risk: number }) => factor.risk), [30, 40], 'no device, no address')
    })

    t.test('another user\'s evaluation needs manage_users', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const user = await createAccount(app)
      const other = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      t.equal((await accessCheck(app, user, { user_id: other.id })).statusCode, 403)
      t.equal((await accessCheck(app, admin, { user_id: other.id })).statusCode, 200)
      t.equal((await accessCheck(app, user, { user_id: user.id.toUpperCase() })).statusCode, 200, 'one\'s own id in upper case is still one\'s own')
      t.equal((await accessCheck(app, user, { client_ip: '1.1.1.1', extra: 1 })).statusCode, 400)
    })

    t.test('trusted devices: at most 5, self or manage_users', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const user = await createAccount(app)
      const stranger = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      for (let n = 1; n <= 5; n++) {
        const added = await addDevice(app, user, user.id, `device-${n}`)
        t.equal(added.statusCode, 201)
        t.same(Object.keys(added.json().data).sort(), ['created_at', 'device_id', 'id', 'name'])
      }
      const sixth = await addDevice(app, user, user.id, 'device-6')
      t.equal(sixth.statusCode, 409)
      t.equal(sixth.json().error.code, 'CONFLICT')
      const list = await app.inject(withToken(user.token, { method: 'GET', url: `/api/v1/users/${user.id}/devices` }))
      t.equal(list.json().meta.total, 5)
      t.equal((await app.inject(withToken(stranger.token, { method: 'GET', url: `/api/v1/users/${user.id}/devices` }))).statusCode, 403)
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${user.id}/devices` }))).statusCode, 200)

      const byDeviceId = await app.inject(withToken(user.token, { method: 'DELETE', url: `/api/v1/users/${user.id}/devices/device-1` }))
      t.equal(byDeviceId.statusCode, 204)
      const recordId = list.json().data[1].id as string
      t.equal((await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${user.id}/devices/${recordId.toUpperCase()}` }))).statusCode, 204,
        'by record id, in upper case')
      t.equal((await app.inject(withToken(user.token, { method: 'DELETE', url: `/api/v1/users/${user.id}/devices/device-1` }))).statusCode, 404)
      t.equal((await addDevice(app, user, user.id, 'device-3')).statusCode, 409, 'the same device twice')
      t.equal((await addDevice(app, user, user.id, 'device-6')).statusCode, 201, 'room again after removals')
    })

    t.test('the longest device_id (128 characters, 256 UTF-16 units) is removed by it too', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const user = await createAccount(app)
      const longest = '\u{1D49C}'.repeat(128)
      const added = await app.inject(withToken(user.token, { method: 'POST', url: `/api/v1/users/${user.id}/devices`, payload: { device_id: longest, name: 'Long' } }))
      t.equal(added.statusCode, 201)
      const removed = await app.inject(withToken(user.token, { method: 'DELETE', url: `/api/v1/users/${user.id}/devices/${encodeURIComponent(longest)}` }))
      t.equal(removed.statusCode, 204)
    })

    t.test('ZERO_TRUST_MODE=enforce refuses admin operations that are not allowed', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { ZERO_TRUST_MODE: 'enforce' } })
      const admin = await createAccount(app, { roles: ['admin'] })
      const target = await createAccount(app)
      const remove = (headers: Record<string, string>) =>
        app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${target.id}`, headers }))
      const refused = await remove({})
      t.equal(refused.statusCode, 403)
      t.same(refused.json(), { error: { code: 'ACCESS_DENIED', message: 'Access denied by zero-trust evaluation' } })
      await addDevice(app, admin, admin.id, 'admin-laptop')
      t.equal((await remove({ 'x-device-id': 'admin-laptop' })).statusCode, 204, 'a trusted device from a private address passes')
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${admin.id}` }))).statusCode, 200, 'other routes are not gated')
    })

    t.test('monitor records admin evaluations; off does not evaluate', async (t) => {
      for (const mode of ['monitor', 'off'] as const) {
        const app = await build(t, { postgresUrl: backend.url, env: { ZERO_TRUST_MODE: mode } })
        const admin = await createAccount(app, { roles: ['admin'] })
        const target = await createAccount(app)
        t.equal((await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${target.id}` }))).statusCode, 204, mode)
        const rows = await app.database.db.selectFrom('audit_logs').select(['details']).where('event', '=', 'access.evaluated').execute()
        t.equal(rows.length, mode === 'monitor' ? 1 : 0, mode)
        if (mode === 'monitor') t.match(JSON.parse(rows[0]?.details ?? '{}'), { mode: 'monitor', allowed: false, risk_score: Number })
      }
    })
  })
}
