import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

/**
 * Changing another account's roles or trusted devices needs every permission that account
 * holds, as changing the account itself does (docs/api.md, "Roles and permissions").
 */
function call (app: FastifyInstance, caller: Account, method: InjectOptions['method'], url: string, payload?: Record<string, unknown>) {
  return app.inject(withToken(caller.token, { method, url: `/api/v1/users/${url}`, ...(payload !== undefined && { payload }) }))
}

const rolesOf = async (app: FastifyInstance, account: Account) =>
  [...(await app.repositories.users.findPrincipal(account.id))?.roles ?? []].sort()

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const superAdmin = await createAccount(app, { roles: ['super_admin'] })
    const admin = await createAccount(app, { roles: ['admin'] })
    const moderator = await createAccount(app, { roles: ['moderator'] })

    t.test('roles: a moderator removes or grants no role of an admin or a super_admin (403), and the roles are kept', async (t) => {
      for (const [target, missing] of [[admin, 'manage_users'], [superAdmin, 'admin']] as const) {
        const before = await rolesOf(app, target)
        for (const [method, role] of [['DELETE', 'user'], ['PUT', 'moderator']] as const) {
          const refused = await call(app, moderator, method, `${target.id}/roles/${role}`)
          t.equal(refused.statusCode, 403, `${method} ${role}`)
          t.equal(refused.json().error.message, `Permission denied. Requires: ${missing}`)
        }
        t.same(await rolesOf(app, target), before, 'the roles are kept')
      }
      const byAdmin = await call(app, admin, 'DELETE', `${superAdmin.id}/roles/user`)
      t.equal(byAdmin.statusCode, 403, 'nor an admin a super_admin\'s')
      t.equal(byAdmin.json().error.message, 'Permission denied. Requires: admin')
      const changes = await app.database.db.selectFrom('audit_logs').select('id').where('event', 'in', ['role.assigned', 'role.removed'])
        .where('target_id', 'in', [admin.id, superAdmin.id]).execute()
      t.same(changes, [], 'nothing changed, nothing audited')
    })

    t.test('roles: the allowed directions still work', async (t) => {
      const user = await createAccount(app)
      const peer = await createAccount(app, { roles: ['moderator'] })
      const deputy = await createAccount(app, { roles: ['admin'] })
      t.equal((await call(app, moderator, 'PUT', `${user.id}/roles/moderator`)).statusCode, 200, 'a moderator on a user')
      t.equal((await call(app, moderator, 'DELETE', `${user.id}/roles/moderator`)).statusCode, 200)
      t.equal((await call(app, moderator, 'DELETE', `${peer.id}/roles/moderator`)).statusCode, 200, 'a moderator on another moderator')
      t.equal((await call(app, admin, 'DELETE', `${deputy.id}/roles/admin`)).statusCode, 200, 'an admin on another admin')
      t.equal((await call(app, superAdmin, 'PUT', `${admin.id}/roles/moderator`)).statusCode, 200, 'a super_admin on an admin')
      t.equal((await call(app, superAdmin, 'DELETE', `${admin.id}/roles/moderator`)).statusCode, 200)
      t.same(await rolesOf(app, peer), ['user'])
      t.same(await rolesOf(app, deputy), ['user'])
    })

    t.test('devices: an admin lists, adds and removes no trusted device of a super_admin (403); the device stays', async (t) => {
      t.equal((await call(app, superAdmin, 'POST', `${superAdmin.id}/devices`, { device_id: 'vault-laptop', name: 'Laptop' })).statusCode, 201)
      const attempts = [
        ['GET', `${superAdmin.id}/devices`, undefined],
        ['POST', `${superAdmin.id}/devices`, { device_id: 'planted', name: 'Planted' }],
        ['DELETE', `${superAdmin.id}/devices/vault-laptop`, undefined]
      ] as const
      for (const [method, url, payload] of attempts) {
        const refused = await call(app, admin, method, url, payload)
        t.equal(refused.statusCode, 403, method)
        t.equal(refused.json().error.message, 'Permission denied. Requires: admin')
      }
      const kept = await call(app, superAdmin, 'GET', `${superAdmin.id}/devices`)
      t.same(kept.json().data.map((device: { device_id: string }) => device.device_id), ['vault-laptop'], 'nothing added, nothing removed')
    })

    t.test('devices: the allowed directions still work', async (t) => {
      const user = await createAccount(app)
      const deputy = await createAccount(app, { roles: ['admin'] })
      for (const [caller, target] of [[user, user], [admin, user], [admin, deputy], [superAdmin, admin]] as const) {
        const deviceId = `device-of-${target.id}-by-${caller.id}`
        t.equal((await call(app, caller, 'POST', `${target.id}/devices`, { device_id: deviceId, name: 'Phone' })).statusCode, 201)
        t.equal((await call(app, caller, 'GET', `${target.id}/devices`)).statusCode, 200)
        t.equal((await call(app, caller, 'DELETE', `${target.id}/devices/${deviceId}`)).statusCode, 204)
      }
    })
  })
}
