import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Account, createAccount, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { loadConfig } from '../../../src/config/index.js'
import { createInstance } from '../../../src/http/instance.js'
import { PBKDF2_ROUNDS } from '../../../src/security/passwords.js'
import { build, TEST_PASSWORD_ROUNDS, TEST_SECRET } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

const PUBLIC_KEYS = ['created_at', 'email', 'email_verified', 'id', 'name']

function patchUser (app: FastifyInstance, caller: Account, id: string, payload: Record<string, unknown>) {
  return app.inject(withToken(caller.token, { method: 'PATCH', url: `/api/v1/users/${id}`, payload }))
}

function register (app: FastifyInstance, body: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/api/v1/users', payload: body })
}

t.test('the app as src/server.ts creates it hashes passwords at PBKDF2_ROUNDS, the tests\' fewer rounds being theirs alone', async (t) => {
  const app = createInstance(loadConfig({ DATABASE_URL: 'sqlite://:memory:', JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent' }))
  t.teardown(async () => await app.close())
  await app.ready()
  const response = await register(app, { email: uniqueEmail(), name: 'Ada Lovelace', password: 'password1' })
  t.equal(response.statusCode, 201)
  const stored = await app.database.db.selectFrom('users').select('password_hash').where('id', '=', response.json().data.id).executeTakeFirstOrThrow()
  t.match(stored.password_hash, new RegExp(`^pbkdf2-sha256\\$${PBKDF2_ROUNDS}\\$`))
  t.equal(PBKDF2_ROUNDS, 120_000)
})

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('POST registers a user: 201, Location, the public fields only, role user', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const email = uniqueEmail()
      const response = await register(app, { email, name: 'Ada Lovelace', password: 'password1' })
      t.equal(response.statusCode, 201)
      const { data } = response.json()
      t.same(Object.keys(data).sort(), PUBLIC_KEYS)
      t.equal(response.headers.location, `/api/v1/users/${data.id}`)
      t.match(data.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      t.equal(data.email, email)
      t.ok(Math.abs(Date.parse(data.created_at) - Date.now()) < 60_000)
      t.notMatch(response.body, /password|hash/i)
      const stored = await app.database.db.selectFrom('users').select('password_hash').where('id', '=', data.id).executeTakeFirstOrThrow()
      t.match(stored.password_hash, new RegExp(`^pbkdf2-sha256\\$${TEST_PASSWORD_ROUNDS}\\$`), 'stored hashed')
      t.same(await app.database.db.selectFrom('user_roles').select('role').where('user_id', '=', data.id).execute(), [{ role: 'user' }])
    })

    t.test('a registered e-mail is 409, whatever its case', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const email = uniqueEmail()
      t.equal((await register(app, { email, name: 'First', password: 'password1' })).statusCode, 201)
      const again = await register(app, { email: email.toUpperCase(), name: 'Second', password: 'password2' })
      t.equal(again.statusCode, 409)
      t.same(again.json(), { error: { code: 'EMAIL_ALREADY_REGISTERED', message: 'Email already registered' } })
    })

    t.test('two concurrent registrations of one address: one 201, one 409', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const email = uniqueEmail()
      const results = await Promise.all([1, 2, 3].map((n) => register(app, { email, name: `Racer ${n}`, password: 'password1' })))
      t.same(results.map((response) => response.statusCode).sort(), [201, 409, 409])
      const rows = await app.database.db.selectFrom('users').select('id').where('email', '=', email).execute()
      t.equal(rows.length, 1)
    })

    t.test('name and password lengths at their boundaries', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const cases: Array<[string, Record<string, unknown>, number]> = [
        ['name 1', { name: 'A' }, 400],
        ['name 2', { name: 'Al' }, 201],
        ['name 100', { name: 'n'.repeat(100) }, 201],
        ['name 101', { name: 'n'.repeat(101) }, 400],
        ['name of spaces', { name: '    ' }, 400],
        ['password 7', { password: 'p'.repeat(7) }, 400],
        ['password 8', { password: 'p'.repeat(8) }, 201],
        ['password 128', { password: 'p'.repeat(128) }, 201],
        ['password 129', { password: 'p'.repeat(129) }, 400],
        ['bad e-mail', { email: 'nope@' }, 400]
      ]
      for (const [label, override, status] of cases) {
        const response = await register(app, { email: uniqueEmail(), name: 'Valid Name', password: 'password1', ...override })
        t.equal(response.statusCode, status, label)
        if (status === 400) t.equal(response.json().error.code, 'VALIDATION_FAILED', label)
      }
    })

    t.test('PASSWORD_POLICY=strong adds length and character-class rules', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { PASSWORD_POLICY: 'strong' } })
      const weak = await register(app, { email: uniqueEmail(), name: 'Weak', password: 'password1' })
      t.equal(weak.statusCode, 400)
      t.same(weak.json().error.details.map((detail: { message: string }) => detail.message), [
        'must be at least 12 characters long', 'must contain an uppercase letter', 'must contain a special character'
      ])
      t.equal((await register(app, { email: uniqueEmail(), name: 'Strong', password: 'Correct-Horse-9' })).statusCode, 201)
    })

    t.test('GET /users/{id}', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const caller = await createAccount(app)
      const found = await app.inject(withToken(caller.token, { method: 'GET', url: `/api/v1/users/${caller.id}` }))
      t.equal(found.statusCode, 200)
      t.same(Object.keys(found.json().data).sort(), PUBLIC_KEYS)
      const missing = await app.inject(withToken(caller.token, { method: 'GET', url: '/api/v1/users/01890000-0000-7000-8000-000000000000' }))
      t.equal(missing.statusCode, 404)
      t.same(missing.json(), { error: { code: 'NOT_FOUND', message: 'User not found' } })
      const malformed = await app.inject(withToken(caller.token, { method: 'GET', url: '/api/v1/users/not-a-uuid' }))
      t.equal(malformed.statusCode, 400)
      t.equal(malformed.json().error.details[0].path, '/id')
      const anonymous = await app.inject({ method: 'GET', url: `/api/v1/users/${caller.id}` })
      t.equal(anonymous.statusCode, 401)
      t.same(anonymous.json(), { error: { code: 'MISSING_TOKEN', message: 'Missing token' } })
    })

    t.test('a user id in upper case or as a URN names the same user, oneself included', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const caller = await createAccount(app)
      for (const spelling of [caller.id.toUpperCase(), `urn:uuid:${caller.id}`, `URN:UUID:${caller.id.toUpperCase()}`]) {
        const found = await app.inject(withToken(caller.token, { method: 'GET', url: `/api/v1/users/${spelling}` }))
        t.equal(found.statusCode, 200, `${spelling}: found`)
        t.equal(found.json().data.id, caller.id, `${spelling}: the same user`)
      }
      // The owner check compares ids: a plain user may change only their own account.
      const renamed = await patchUser(app, caller, caller.id.toUpperCase(), { name: 'Renamed' })
      t.equal(renamed.statusCode, 200, 'recognized as oneself')
      t.equal(renamed.json().data.name, 'Renamed')
    })

    t.test('PATCH and PUT: oneself, others, managers', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const self = await createAccount(app)
      const other = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      const patch = (caller: Account, id: string, payload: Record<string, unknown>) =>
        patchUser(app, caller, id, payload)

      const renamed = await patch(self, self.id, { name: 'New Name' })
      t.equal(renamed.statusCode, 200)
      t.equal(renamed.json().data.name, 'New Name')
      t.equal(renamed.json().data.email, self.email, 'untouched fields stay')

      const forbidden = await patch(self, other.id, { name: 'Hijacked' })
      t.equal(forbidden.statusCode, 403)
      t.same(forbidden.json(), { error: { code: 'FORBIDDEN', message: 'Permission denied. Requires: manage_users' } })

      t.equal((await patch(admin, other.id, { name: 'Moderated' })).statusCode, 200, 'manage_users may edit others')
      t.equal((await patch(admin, '01890000-0000-7000-8000-000000000000', { name: 'Ghost' })).statusCode, 404)

      const taken = await patch(self, self.id, { email: other.email.toUpperCase() })
      t.equal(taken.statusCode, 409)
      t.equal(taken.json().error.code, 'EMAIL_ALREADY_REGISTERED')

      const unknownField = await patch(self, self.id, { roles: ['admin'] })
      t.equal(unknownField.statusCode, 400, 'roles cannot be patched in')

      const replaced = await app.inject(withToken(self.token, {
        method: 'PUT', url: `/api/v1/users/${self.id}`, payload: { email: uniqueEmail('replaced'), name: 'Replaced' }
      }))
      t.equal(replaced.statusCode, 200)
      t.equal(replaced.json().data.name, 'Replaced')
      const partialPut = await app.inject(withToken(self.token, { method: 'PUT', url: `/api/v1/users/${self.id}`, payload: { name: 'Only' } }))
      t.equal(partialPut.statusCode, 400, 'PUT is a full replacement')
      t.equal(partialPut.json().error.details[0].path, '/email')
    })

    t.test('changing one\'s password needs current_password and ends other sessions', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const self = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      const change = (caller: Account, id: string, payload: Record<string, unknown>) =>
        patchUser(app, caller, id, payload)

      const missing = await change(self, self.id, { password: 'brand-new-pass' })
      t.equal(missing.statusCode, 400)
      t.same(missing.json().error.details, [{ path: '/current_password', message: 'is required to change the password' }])
      const wrong = await change(self, self.id, { password: 'brand-new-pass', current_password: 'not-it-at-all' })
      t.equal(wrong.statusCode, 400)
      t.equal(wrong.json().error.details[0].path, '/current_password')

      const changed = await change(self, self.id, { password: 'brand-new-pass', current_password: self.password })
      t.equal(changed.statusCode, 200)
      t.notMatch(changed.body, /password/)
      const live = await app.database.db.selectFrom('refresh_tokens').select('jti').where('user_id', '=', self.id).where('revoked_at', 'is', null).execute()
      t.same(live, [], 'sessions revoked')
      const login = (password: string) => app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: self.email, password } })
      t.equal((await login(self.password)).statusCode, 401, 'old password refused')
      t.equal((await login('brand-new-pass')).statusCode, 200, 'new password accepted')

      const reset = await change(admin, self.id, { password: 'admin-chosen-pass' })
      t.equal(reset.statusCode, 200, 'a manager resets without the current password')
      t.equal((await login('admin-chosen-pass')).statusCode, 200)
    })

    t.test('wrong current passwords count toward the sign-in lockout and are audited', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const self = await createAccount(app)
      const change = (current: string) => patchUser(app, self, self.id, { password: 'brand-new-pass', current_password: current })
      for (let n = 0; n < 5; n++) t.equal((await change(`guess-number-${n}`)).statusCode, 400)
      const locked = await change(self.password)
      t.equal(locked.statusCode, 423, 'locked: even the right password is refused')
      t.equal(locked.json().error.code, 'ACCOUNT_LOCKED')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: self.email, password: self.password } })
      t.equal(login.statusCode, 423, 'and sign-in from that address')
      const failures = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login_failed').where('actor_id', '=', self.id).orderBy('id').execute()
      t.same(failures.map((row) => JSON.parse(row.details).reason), [...Array(5).fill('wrong_current_password'), 'locked', 'locked'])
      const stored = await app.database.db.selectFrom('users').select('password_hash').where('id', '=', self.id).executeTakeFirstOrThrow()
      t.ok(await app.passwords.verify(self.password, stored.password_hash ?? ''), 'the password is unchanged')
    })

    t.test('DELETE needs manage_users, is idempotent, and removes the user\'s data', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const victim = await createAccount(app)
      const user = await createAccount(app)
      const moderator = await createAccount(app, { roles: ['moderator'] })
      const admin = await createAccount(app, { roles: ['admin'] })
      const remove = (caller: Account, id: string) => app.inject(withToken(caller.token, { method: 'DELETE', url: `/api/v1/users/${id}` }))

      for (const caller of [user, moderator, victim]) {
        const refused = await remove(caller, victim.id)
        t.equal(refused.statusCode, 403)
        t.same(refused.json(), { error: { code: 'FORBIDDEN', message: 'Permission denied. Requires: manage_users' } })
      }
      const first = await remove(admin, victim.id)
      t.equal(first.statusCode, 204)
      t.equal(first.body, '')
      t.equal((await remove(admin, victim.id)).statusCode, 204, 'repeated DELETE answers 204')
      t.equal((await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${victim.id}` }))).statusCode, 404)
      for (const table of ['user_roles', 'refresh_tokens'] as const) {
        const rows = await app.database.db.selectFrom(table).select('user_id').where('user_id', '=', victim.id).execute()
        t.same(rows, [], `${table} cleaned up`)
      }
      const stale = await app.inject(withToken(victim.token, { method: 'GET', url: `/api/v1/users/${user.id}` }))
      t.equal(stale.statusCode, 401, 'a deleted user\'s token stops working')
    })

    t.test('another account is changed or deleted only by one holding all its permissions: an admin cannot take over a super_admin', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const admin = await createAccount(app, { roles: ['admin'] })
      const otherAdmin = await createAccount(app, { roles: ['admin'] })
      const call = (caller: Account, method: 'PATCH' | 'PUT' | 'DELETE', id: string, payload?: Record<string, unknown>) =>
        app.inject(withToken(caller.token, { method, url: `/api/v1/users/${id}`, ...(payload === undefined ? {} : { payload }) }))
      const takeover = { email: uniqueEmail('taken'), name: 'Taken', password: 'attacker-chosen-1' }

      for (const [method, payload] of [['PATCH', { password: takeover.password }], ['PUT', takeover], ['DELETE', undefined]] as const) {
        const refused = await call(admin, method, superAdmin.id, payload)
        t.equal(refused.statusCode, 403, `${method} of a super_admin by an admin`)
        t.same(refused.json(), { error: { code: 'FORBIDDEN', message: 'Permission denied. Requires: admin' } })
      }
      const signIn = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: superAdmin.email, password: superAdmin.password } })
      t.equal(signIn.statusCode, 200, 'the super_admin\'s credentials are unchanged')

      t.equal((await call(admin, 'PATCH', otherAdmin.id, { name: 'Peer' })).statusCode, 200, 'an admin may change an equal')
      t.equal((await call(superAdmin, 'PATCH', admin.id, { name: 'Managed' })).statusCode, 200, 'a super_admin may change an admin')
      t.equal((await call(superAdmin, 'DELETE', otherAdmin.id)).statusCode, 204, 'and delete one')
      t.equal((await call(admin, 'DELETE', '01890000-0000-7000-8000-000000000000')).statusCode, 204, 'a missing account is still 204')
    })
  })
}
