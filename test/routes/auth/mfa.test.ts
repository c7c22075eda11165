import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import { PNG } from 'pngjs'
import t from 'tap'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'

// jsqr is CommonJS with an ESM-style default in its typings.
const jsQR = createRequire(import.meta.url)('jsqr') as typeof import('jsqr').default

/** A code for the step `offset` steps from now: the enabling code is spent, so later sign-ins use the next step. */
const totp = (secret: string, offset = 0) =>
  generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 })

/** A code no step near now accepts (the verifier allows a step of drift; two more for a test crossing a step). */
function wrongCode (secret: string): string {
  const near = new Set([-2, -1, 0, 1, 2].map((offset) => totp(secret, offset)))
  return ['000000', '111111', '222222', '333333', '444444', '555555'].find((code) => !near.has(code)) ?? '666666'
}

async function enrol (app: FastifyInstance, account: Account) {
  const setup = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
  if (setup.statusCode !== 200) throw new Error(setup.body)
  const { secret } = setup.json().data as { secret: string }
  const enabled = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: totp(secret) } }))
  if (enabled.statusCode !== 200) throw new Error(enabled.body)
  return { secret, backupCodes: enabled.json().data.backup_codes as string[], setup: setup.json().data }
}

function login (app: FastifyInstance, account: Account) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
}

function verify (app: FastifyInstance, mfaToken: string, code: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: mfaToken, code } })
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('enrolment: secret, URI and a QR code whose PNG holds the URI', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { MFA_ISSUER: 'Acme Users' } })
      const account = await createAccount(app)
      const { secret, backupCodes, setup } = await enrol(app, account)
      t.match(secret, /^[A-Z2-7]{32}$/)
      t.equal(setup.otpauth_url, `otpauth://totp/Acme%20Users:${encodeURIComponent(account.email)}?secret=${secret}&issuer=Acme%20Users`)
      t.match(setup.qr_code, /^data:image\/png;base64,/)
      const png = PNG.sync.read(Buffer.from(setup.qr_code.replace('data:image/png;base64,', ''), 'base64'))
      t.equal(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data, setup.otpauth_url, 'the QR code decodes to the URI')
      t.equal(backupCodes.length, 10)
      for (const code of backupCodes) t.match(code, /^\d{6}$/)

      const stored = await app.database.db.selectFrom('users').select(['totp_secret']).where('id', '=', account.id).executeTakeFirstOrThrow()
      t.notMatch(stored.totp_secret ?? '', secret, 'stored sealed, not in clear')
      const codes = await app.database.db.selectFrom('mfa_backup_codes').select('code_hash').where('user_id', '=', account.id).execute()
      t.equal(codes.length, 10)
      t.notOk(codes.some((row) => backupCodes.includes(row.code_hash)), 'backup codes stored hashed')

      const again = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
      t.equal(again.statusCode, 409, 'the secret is never handed out again')
      const me = await app.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.json().data.mfa_enabled, true)
      t.notMatch(me.body, secret)
    })

    t.test('the enabling code is spent; a wrong first code is refused', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const setup = (await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))).json().data
      const wrong = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: totp(setup.secret) === '000000' ? '111111' : '000000' } }))
      t.equal(wrong.statusCode, 401)
      t.equal(wrong.json().error.code, 'INVALID_MFA_CODE')
      const code = totp(setup.secret)
      t.equal((await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code } }))).statusCode, 200)
      const challenge = (await login(app, account)).json().data
      const replay = await verify(app, challenge.mfa_token, code)
      t.equal(replay.statusCode, 401, 'the enabling code cannot sign in')
      t.equal(replay.json().error.code, 'INVALID_MFA_CODE')
    })

    t.test('sign-in with MFA: challenge, then a computed TOTP code; the challenge is single use', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const first = await login(app, account)
      t.equal(first.statusCode, 200)
      const challenge = first.json().data
      t.same(Object.keys(challenge).sort(), ['methods', 'mfa_required', 'mfa_token'])
      t.equal(challenge.mfa_required, true)
      t.same(challenge.methods, ['totp', 'backup_code'])
      t.equal((await app.inject(withToken(challenge.mfa_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 401,
        'the mfa_token is not an access token')

      const code = totp(secret, 1)
      const done = await verify(app, challenge.mfa_token, code)
      t.equal(done.statusCode, 200)
      t.equal(done.json().data.token_type, 'Bearer')
      t.equal((await app.inject(withToken(done.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200)
      const reused = await verify(app, challenge.mfa_token, totp(secret, 1))
      t.equal(reused.statusCode, 401, 'a used challenge or code is refused')

      const second = (await login(app, account)).json().data
      const replayed = await verify(app, second.mfa_token, code)
      t.equal(replayed.json().error.code, 'INVALID_MFA_CODE', 'the code is spent even with a new challenge')
    })

    t.test('a sign-in completed by a code is audited as auth.login with its method and the device given at sign-in', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const device = { id: 'laptop-1', name: 'Laptop' }
      const challenge = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password, device } })
      t.equal((await verify(app, challenge.json().data.mfa_token, totp(secret, 1))).statusCode, 200)
      const logins = await app.database.db.selectFrom('audit_logs').select(['details', 'outcome']).where('event', '=', 'auth.login').where('actor_id', '=', account.id).orderBy('id').execute()
      t.same(logins.map((row) => ({ ...row, details: JSON.parse(row.details) })), [
        { outcome: 'success', details: { method: 'password' } }, // createAccount's, before enrolment
        { outcome: 'success', details: { method: 'mfa:totp', device } }
      ])
    })

    t.test('backup codes work once; a new set replaces the old', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret, backupCodes } = await enrol(app, account)
      const [first = '', second = ''] = backupCodes
      const ok = await verify(app, (await login(app, account)).json().data.mfa_token, first)
      t.equal(ok.statusCode, 200)
      const again = await verify(app, (await login(app, account)).json().data.mfa_token, first)
      t.equal(again.statusCode, 401)
      t.equal(again.json().error.code, 'INVALID_MFA_CODE')

      const fresh = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/backup-codes', payload: { code: totp(secret, 1) } }))
      t.equal(fresh.statusCode, 200)
      const newCodes = fresh.json().data.backup_codes as string[]
      t.equal(newCodes.length, 10)
      t.equal((await verify(app, (await login(app, account)).json().data.mfa_token, second)).statusCode, 401, 'the old set stopped working')
      t.equal((await verify(app, (await login(app, account)).json().data.mfa_token, newCodes[0] ?? '')).statusCode, 200)
    })

    t.test('wrong codes count toward the lockout', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const { mfa_token: token } = (await login(app, account)).json().data
      const wrong = wrongCode(secret)
      for (let n = 0; n < 5; n++) t.equal((await verify(app, token, wrong)).statusCode, 401)
      const locked = await verify(app, token, totp(secret, 1))
      t.equal(locked.statusCode, 423)
      t.equal((await login(app, account)).statusCode, 423, 'and the password sign-in too')
    })

    t.test('a new challenge does not wipe the wrong codes counted so far', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const wrong = wrongCode(secret)
      const challenge = async () => (await login(app, account)).json().data.mfa_token as string
      const first = await challenge()
      for (let n = 0; n < 4; n++) t.equal((await verify(app, first, wrong)).statusCode, 401)
      const second = await challenge()
      t.equal((await verify(app, second, wrong)).statusCode, 401, 'the fifth wrong code, under a new challenge')
      t.equal((await verify(app, second, totp(secret, 1))).statusCode, 423, 'locked: five wrong codes in the window')
    })

    t.test('wrong codes where a code turns MFA off or mints backup codes count toward the lockout and are audited', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const wrong = [totp(secret, -1), totp(secret), totp(secret, 1)].includes('000000') ? '111111' : '000000'
      const remove = (code: string) => app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/auth/mfa/totp', payload: { code } }))
      const mint = (code: string) => app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/backup-codes', payload: { code } }))
      for (let n = 0; n < 3; n++) t.equal((await remove(wrong)).statusCode, 401)
      for (let n = 0; n < 2; n++) t.equal((await mint(wrong)).statusCode, 401)
      const refused = await remove(totp(secret, 1))
      t.equal(refused.statusCode, 423, 'locked after five wrong codes: even the right code is refused')
      t.equal(refused.json().error.code, 'ACCOUNT_LOCKED')
      t.equal((await mint(totp(secret, 1))).statusCode, 423)
      t.equal((await login(app, account)).statusCode, 423, 'and sign-in from that address')
      const failures = await app.database.db.selectFrom('audit_logs').select(['details', 'outcome']).where('event', '=', 'auth.mfa_failed').where('actor_id', '=', account.id).orderBy('id').execute()
      t.same(failures.map((row) => JSON.parse(row.details).action), ['disable', 'disable', 'disable', 'backup_codes', 'backup_codes', 'disable', 'backup_codes'])
      t.same(failures.slice(5).map((row) => JSON.parse(row.details).reason), ['locked', 'locked'])
      const state = await app.database.db.selectFrom('users').select('totp_enabled_at').where('id', '=', account.id).executeTakeFirstOrThrow()
      t.not(state.totp_enabled_at, null, 'MFA is still on')
    })

    t.test('simultaneous wrong codes at DELETE /auth/mfa/totp: five are answered, the rest refused as locked, MFA stays on', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = await enrol(app, account)
      const valid = new Set([totp(secret, -1), totp(secret), totp(secret, 1)])
      const guesses = Array.from({ length: 100 }, (_, n) => String(n).padStart(6, '0')).filter((code) => !valid.has(code)).slice(0, 8)
      const answers = await Promise.all(guesses.map((code) =>
        app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/auth/mfa/totp', payload: { code } }))))
      t.same(answers.map((answer) => answer.statusCode).sort(), [401, 401, 401, 401, 401, 423, 423, 423])
      const state = await app.database.db.selectFrom('users').select('totp_enabled_at').where('id', '=', account.id).executeTakeFirstOrThrow()
      t.not(state.totp_enabled_at, null)
    })

    t.test('a right code that settles after a lock began is answered 423 and acts on nothing', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret, backupCodes } = await enrol(app, account)
      const [first = '', second = ''] = backupCodes
      // While the right code is being checked, five failures from the caller's address lock the account.
      const lockMeanwhile = async () => {
        for (let n = 0; n < 5; n++) await app.services.signInGuard.settle(account.id, '127.0.0.1', false).catch(() => {})
      }
      const unlock = async () => {
        await app.database.db.deleteFrom('lockouts').where('user_id', '=', account.id).execute()
        await app.database.db.deleteFrom('sign_in_failures').where('user_id', '=', account.id).execute()
      }
      const { mfa } = app.services
      const verifyCode = mfa.verifyCode.bind(mfa)
      const acceptTotpCode = mfa.acceptTotpCode.bind(mfa)
      mfa.verifyCode = async (userId, code) => await verifyCode(userId, code).finally(lockMeanwhile)
      mfa.acceptTotpCode = async (userId, code) => await acceptTotpCode(userId, code).finally(lockMeanwhile)

      const remove = await app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/auth/mfa/totp', payload: { code: first } }))
      t.equal(remove.statusCode, 423)
      await unlock()
      const mint = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/backup-codes', payload: { code: totp(secret, 1) } }))
      t.equal(mint.statusCode, 423)
      await unlock()
      mfa.verifyCode = verifyCode
      const challenge = await login(app, account)
      t.equal(challenge.json().data.mfa_required, true, 'MFA is still on')
      t.equal((await verify(app, challenge.json().data.mfa_token, second)).statusCode, 200, 'the backup codes shown at enrolment still work')
    })

    t.test('disabling needs a code; sign-in is then plain again', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { backupCodes } = await enrol(app, account)
      const remove = (code: string) => app.inject(withToken(account.token, { method: 'DELETE', url: '/api/v1/auth/mfa/totp', payload: { code } }))
      t.equal((await remove('000001')).statusCode, 401)
      t.equal((await remove(backupCodes[0] ?? '')).statusCode, 204)
      const plain = await login(app, account)
      t.ok(plain.json().data.access_token, 'no challenge any more')
      t.equal((await app.database.db.selectFrom('mfa_backup_codes').select('id').where('user_id', '=', account.id).execute()).length, 0)
    })

    t.test('roles in MFA_REQUIRED_ROLES must enrol before anything else', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { MFA_REQUIRED_ROLES: 'admin,super_admin' } })
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      const call = (account: Account, method: 'GET' | 'POST', url: string) => app.inject(withToken(account.token, { method, url }))
      t.equal((await call(admin, 'GET', '/api/v1/auth/me')).statusCode, 200, '/auth/me is open')
      const blocked = await call(admin, 'GET', '/api/v1/users')
      t.equal(blocked.statusCode, 403)
      t.same(blocked.json(), { error: { code: 'MFA_ENROLLMENT_REQUIRED', message: 'MFA enrollment required' } })
      t.equal((await call(admin, 'GET', `/api/v1/users/${user.id}`)).statusCode, 403)
      t.equal((await call(user, 'GET', '/api/v1/users')).statusCode, 200, 'plain users are not affected')

      const { secret } = await enrol(app, admin)
      const challenge = (await login(app, admin)).json().data
      t.equal(challenge.mfa_required, true)
      const pair = (await verify(app, challenge.mfa_token, totp(secret, 1))).json().data
      t.equal((await app.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/users' }))).statusCode, 200, 'enrolled: everything opens')
      const out = await app.inject(withToken(admin.token, { method: 'POST', url: '/api/v1/auth/logout' }))
      t.equal(out.statusCode, 204, '/auth/logout is open')
    })
  })
}
