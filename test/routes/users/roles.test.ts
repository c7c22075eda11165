import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

function roleCall (app: FastifyInstance, caller: Account, method: 'GET' | 'PUT' | 'DELETE', userId: string, role?: string) {
  return app.inject(withToken(caller.token, { method, url: `/api/v1/users/${userId}/roles${role === undefined ? '' : `/${role}`}` }))
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })
    const superAdmin = await createAccount(app, { roles: ['super_admin'] })
    const admin = await createAccount(app, { roles: ['admin'] })
    const moderator = await createAccount(app, { roles: ['moderator'] })

    t.test('GET: oneself, or manage_roles', async (t) => {
      const user = await createAccount(app)
      const own = await roleCall(app, user, 'GET', user.id)
      t.equal(own.statusCode, 200)
      t.same(own.json(), { data: { roles: ['user'], permissions: ['read', 'create', 'write', 'update', 'delete'] } })
      const other = await createAccount(app)
      const refused = await roleCall(app, user, 'GET', other.id)
      t.equal(refused.statusCode, 403)
      t.equal(refused.json().error.message, 'Permission denied. Requires: manage_roles')
      t.equal((await roleCall(app, moderator, 'GET', other.id)).statusCode, 200)
      t.equal((await roleCall(app, moderator, 'GET', '01890000-0000-7000-8000-000000000000')).statusCode, 404)
    })

    t.test('PUT assigns; DELETE removes and is harmless when absent', async (t) => {
      const user = await createAccount(app)
      const assigned = await roleCall(app, moderator, 'PUT', user.id, 'moderator')
      t.equal(assigned.statusCode, 200)
      t.same(assigned.json().data.roles.sort(), ['moderator', 'user'])
      t.ok(assigned.json().data.permissions.includes('manage_roles'))
      t.equal((await roleCall(app, moderator, 'PUT', user.id, 'moderator')).statusCode, 200, 'assigning twice is harmless')

      const removed = await roleCall(app, moderator, 'DELETE', user.id, 'moderator')
      t.equal(removed.statusCode, 200)
      t.same(removed.json().data.roles, ['user'])
      const absent = await roleCall(app, moderator, 'DELETE', user.id, 'moderator')
      t.equal(absent.statusCode, 200)
      t.same(absent.json().data.roles, ['user'])

      const none = await roleCall(app, admin, 'DELETE', user.id, 'user')
      t.same(none.json().data, { roles: ['anonymous'], permissions: ['read'] }, 'no roles: anonymous')
    })

    t.test('nobody grants what they do not hold', async (t) => {
      const user = await createAccount(app)
      const byModerator = await roleCall(app, moderator, 'PUT', user.id, 'admin')
      t.equal(byModerator.statusCode, 403)
      t.equal(byModerator.json().error.message, 'Permission denied. Requires: manage_users')
      const byAdmin = await roleCall(app, admin, 'PUT', user.id, 'super_admin')
      t.equal(byAdmin.statusCode, 403)
      t.equal(byAdmin.json().error.message, 'Permission denied. Requires: admin')
      t.equal((await roleCall(app, admin, 'PUT', user.id, 'admin')).statusCode, 200)
      t.equal((await roleCall(app, moderator, 'DELETE', user.id, 'admin')).statusCode, 403, 'nor takes it away')
      t.equal((await roleCall(app, superAdmin, 'PUT', user.id, 'super_admin')).statusCode, 200, 'super_admin grants everything')
      const plain = await createAccount(app)
      const byUser = await roleCall(app, plain, 'PUT', plain.id, 'moderator')
      t.equal(byUser.statusCode, 403)
      t.equal(byUser.json().error.message, 'Permission denied. Requires: manage_roles')
    })

    t.test('bad role names and missing users', async (t) => {
      const user = await createAccount(app)
      for (const role of ['root', 'anonymous', 'ADMIN']) {
        t.equal((await roleCall(app, superAdmin, 'PUT', user.id, role)).statusCode, 400, role)
      }
      t.equal((await roleCall(app, superAdmin, 'PUT', '01890000-0000-7000-8000-000000000000', 'user')).statusCode, 404)
      t.equal((await roleCall(app, superAdmin, 'DELETE', '01890000-0000-7000-8000-000000000000', 'user')).statusCode, 404)
      const removals = await app.database.db.selectFrom('audit_logs').select('id')
        .where('event', 'in', ['role.assigned', 'role.removed']).where('target_id', '=', '01890000-0000-7000-8000-000000000000').execute()
      t.same(removals, [], 'no role change is audited for a user that does not exist')
    })

    t.test('a removal takes effect on protected routes at once', async (t) => {
      const deputy = await createAccount(app, { roles: ['admin'] })
      const target = await createAccount(app)
      t.equal((await roleCall(app, superAdmin, 'DELETE', deputy.id, 'admin')).statusCode, 200)
      const attempt = await app.inject(withToken(deputy.token, { method: 'DELETE', url: `/api/v1/users/${target.id}` }))
      t.equal(attempt.statusCode, 403, 'the old token no longer carries the role\'s power')
    })
  })
}
