import { createHash } from 'node:crypto'
import t from 'tap'
import { TokenService } from '../../../src/security/tokens.js'
import { claimsOf, createAccount, withToken } from '../../helpers/accounts.js'
import { TEST_SECRET, build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('login answers the token pair', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const response = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: account.email.toUpperCase(), password: account.password, device: { id: 'laptop-1', name: 'Work laptop' } }
      })
      t.equal(response.statusCode, 200)
      const { data } = response.json()
      t.same(Object.keys(data).sort(), ['access_token', 'expires_in', 'mfa_required', 'refresh_expires_in', 'refresh_token', 'token_type'])
      t.equal(data.mfa_required, false, 'no second factor asked: the discriminator of the sign-in result')
      t.equal(data.token_type, 'Bearer')
      t.equal(data.expires_in, 900)
      t.equal(data.refresh_expires_in, 604800)

      const claims = claimsOf(data.access_token)
      t.same(Object.keys(claims).sort(), ['amr', 'auth_time', 'exp', 'iat', 'jti', 'roles', 'sub', 'type'])
      t.same(claims.amr, ['pwd'], 'proved by a password')
      t.equal(claims.auth_time, claims.iat, 'at sign-in')
      t.equal(claims.sub, account.id)
      t.same(claims.roles, ['user'])
      t.equal(claims.type, 'access')
      t.equal(JSON.parse(Buffer.from(data.access_token.split('.')[0], 'base64url').toString()).alg, 'HS256')

      const stored = await app.database.db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', account.id).execute()
      const row = stored.find((token) => token.token_hash === createHash('sha256').update(data.refresh_token).digest('hex'))
      t.ok(row, 'the refresh token is stored as its SHA-256 hash')
      t.notOk(stored.some((token) => Object.values(token).includes(data.refresh_token)), 'never in clear')
      t.same(JSON.parse(row?.device ?? '{}'), { id: 'laptop-1', name: 'Work laptop' })
    })

    t.test('wrong password and unknown e-mail answer alike', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const wrong = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: 'wrong-password' } })
      const unknown = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody@example.com', password: 'wrong-password' } })
      for (const response of [wrong, unknown]) {
        t.equal(response.statusCode, 401)
        t.same(response.json(), { error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } })
      }
      const noPassword = await app.repositories.users.create({ email: 'oauth-only@example.com', name: 'OAuth', passwordHash: null, roles: ['user'], emailVerified: false })
      const passwordless = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: noPassword.email, password: 'anything' } })
      t.equal(passwordless.statusCode, 401, 'an account without a password cannot sign in with one')
    })

    t.test('GET /auth/me: the user with roles, permissions and MFA state', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app, { roles: ['moderator'] })
      const response = await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(response.statusCode, 200)
      const { data } = response.json()
      t.same(Object.keys(data).sort(), ['created_at', 'email', 'email_verified', 'id', 'mfa_enabled', 'mfa_methods', 'name', 'permissions', 'phone', 'roles'])
      t.same(data.roles.sort(), ['moderator', 'user'])
      t.same(data.permissions.sort(), ['create', 'delete', 'manage_roles', 'read', 'update', 'write'])
      t.equal(data.mfa_enabled, false)
    })

    t.test('a user with no roles is anonymous', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      await app.database.db.deleteFrom('user_roles').where('user_id', '=', account.id).execute()
      const me = (await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data
      t.same(me.roles, ['anonymous'])
      t.same(me.permissions, ['read'])
    })

    t.test('bearer authentication failures and their error codes', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const me = (authorization?: string) => app.inject({
        method: 'GET', url: '/api/v1/auth/me', headers: authorization === undefined ? {} : { authorization }
      })
      const expired = new TokenService({ secret: TEST_SECRET, now: () => Date.now() - 3600_000 }).issueAccessToken({ sub: account.id, roles: ['user'] }).token
      const foreign = new TokenService({ secret: 'some-other-secret-some-other-secret' }).issueAccessToken({ sub: account.id, roles: ['user'] }).token
      const refresh = new TokenService({ secret: TEST_SECRET }).issueRefreshToken(account.id).token
      const cases: Array<[string | undefined, string, string]> = [
        [undefined, 'MISSING_TOKEN', 'Missing token'],
        [`Basic ${Buffer.from('a:b').toString('base64')}`, 'MISSING_TOKEN', 'Missing token'],
        [`bearer ${account.token}`, 'MISSING_TOKEN', 'Missing token'],
        ['Bearer ', 'INVALID_TOKEN', 'Invalid token'],
        ['Bearer not-a-jwt', 'INVALID_TOKEN', 'Invalid token'],
        [`Bearer ${foreign}`, 'INVALID_TOKEN', 'Invalid token'],
        [`Bearer ${refresh}`, 'INVALID_TOKEN', 'Invalid token'],
        [`Bearer ${expired}`, 'TOKEN_EXPIRED', 'Invalid token']
      ]
      for (const [authorization, code, message] of cases) {
        const response = await me(authorization)
        t.equal(response.statusCode, 401, String(authorization))
        t.same(response.json(), { error: { code, message } })
        t.equal(response.headers['www-authenticate'], 'Bearer')
      }
      t.equal((await me(`Bearer ${account.token}`)).statusCode, 200)
    })

    t.test('roles come from the store: a removal takes effect at once', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const admin = await createAccount(app, { roles: ['admin'] })
      const other = await createAccount(app)
      await app.database.db.deleteFrom('user_roles').where('user_id', '=', admin.id).where('role', '=', 'admin').execute()
      const response = await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${other.id}` }))
      t.equal(response.statusCode, 403)
    })
  })
}
