import t from 'tap'
import { build } from '../../helpers/app.js'
import { freshDatabaseUrl } from '../../helpers/database.js'

t.test('ADMIN_EMAIL/ADMIN_PASSWORD ensure a super_admin, idempotently', async (t) => {
  const databaseUrl = await freshDatabaseUrl(t, null, { shared: true })
  const env = { ADMIN_EMAIL: 'Root@Example.com', ADMIN_PASSWORD: 'first-password' }

  const login = async (app: Awaited<ReturnType<typeof build>>, password: string) =>
    await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'root@example.com', password } })

  const first = await build(t, { databaseUrl, env })
  const signedIn = await login(first, 'first-password')
  t.equal(signedIn.statusCode, 200)
  const me = await first.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${signedIn.json().data.access_token}` } })
  t.same(me.json().data.roles, ['super_admin'])
  t.same(me.json().data.permissions, ['admin'])
  await first.close()

  // A restart with another password, and a role lost meanwhile, on the same database file.
  const second = await build(t, { databaseUrl, env: { ...env, ADMIN_PASSWORD: 'second-password' } })
  t.equal((await login(second, 'first-password')).statusCode, 200, 'an existing account keeps its password')
  t.equal((await login(second, 'second-password')).statusCode, 401)
  const rows = await second.database.db.selectFrom('users').select('id').where('email', '=', 'root@example.com').execute()
  t.equal(rows.length, 1, 'no duplicate account')
  await second.database.db.deleteFrom('user_roles').execute()
  await second.close()

  const third = await build(t, { databaseUrl, env })
  const roles = await third.database.db.selectFrom('user_roles').select('role').execute()
  t.same(roles, [{ role: 'super_admin' }], 'the role is restored')
})
