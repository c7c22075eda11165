import t from 'tap'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'

t.test('a route that declares no access stops start-up, naming the route', async (t) => {
  // Routes come in plugins registered after the application, as a feature's routes do.
  await t.rejects(build(t, { extend: (app) => { void app.register(async (routes) => { routes.get('/undeclared', async () => ({ ok: true })) }) } }),
    /GET \/undeclared declares no access: set config\.access/)
})

t.test('a declared route gets its guards and its security from the one declaration', async (t) => {
  const app = await build(t, {
    extend: (app) => {
      void app.register(async (app) => {
        app.get('/declared/public', { config: { access: 'public' } }, async () => ({ ok: true }))
        app.get('/declared/optional', { config: { access: 'optional' } }, async (request) => ({ caller: request.user?.id ?? null }))
        app.get('/declared/bearer', { config: { access: 'bearer' } }, async (request) => ({ caller: request.user?.id }))
        app.get('/declared/permission', { config: { access: { permission: 'manage_users' } } }, async () => ({ ok: true }))
        app.get('/declared/:id', { config: { access: { permission: 'manage_users', self: 'read' } } }, async () => ({ ok: true }))
      })
    }
  })
  const user = await createAccount(app)
  const admin = await createAccount(app, { roles: ['admin'] })
  const status = async (url: string, token?: string) =>
    (await app.inject(token === undefined ? { method: 'GET', url } : withToken(token, { method: 'GET', url }))).statusCode

  t.equal(await status('/declared/public'), 200)
  t.equal(await status('/declared/optional'), 200, 'optional: nobody')
  t.same((await app.inject(withToken(user.token, { method: 'GET', url: '/declared/optional' }))).json(), { caller: user.id }, 'optional: a caller is known')
  t.equal(await status('/declared/optional', 'not-a-token'), 401, 'optional: a token sent must be good')
  t.equal(await status('/declared/bearer'), 401)
  t.equal(await status('/declared/bearer', user.token), 200)
  t.equal(await status('/declared/permission', user.token), 403)
  t.equal(await status('/declared/permission', admin.token), 200)
  t.equal(await status(`/declared/${user.id}`, user.token), 200, 'oneself')
  t.equal(await status(`/declared/${admin.id}`, user.token), 403, 'another user needs the permission')
  t.equal(await status(`/declared/${user.id}`, admin.token), 200)

  const document = app.swagger() as { paths: Record<string, Record<string, { security?: unknown }>> }
  t.same(document.paths['/api/v1/users']?.get?.security, [{ bearerAuth: [] }], 'a permission route: bearer')
  t.same(document.paths['/api/v1/users']?.post?.security, [], 'a public route: none')
  t.same(document.paths['/api/v1/posts']?.get?.security, [{}, { bearerAuth: [] }], 'an optional route: either')
})
