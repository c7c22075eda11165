import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { type Account, backends, build, claimsOf, createAccount, freshDatabaseUrl, stateCookie, TEST_PASSWORD, uniqueEmail, withToken } from '../helper.js'
import { mailServer, tokenIn } from '../mail-server.js'
import { providerFor, type TestProvider } from '../oauth-provider.js'

const REDIRECT = 'http://127.0.0.1:3000/callback'
const REAUTHENTICATION_CHALLENGE = 'Bearer error="insufficient_user_authentication"'

/** A provider sign-in as a browser makes it: /authorize, approval at the provider, /callback. */
async function providerSignIn (app: FastifyInstance, provider: TestProvider, profile: Record<string, unknown>) {
  const authorize = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/microsoft/authorize' })
  const location = new URL(String(authorize.headers.location))
  const code = provider.approve(location.searchParams.get('code_challenge') ?? '', profile)
  return await app.inject({
    method: 'GET',
    url: `/api/v1/auth/oauth/microsoft/callback?code=${code}&state=${location.searchParams.get('state') ?? ''}`,
    headers: { cookie: stateCookie(authorize) }
  })
}

/** Asserts the refusal of a change made with an access token alone. */
function assertReauthenticationRequired (t: { equal (found: unknown, wanted: unknown, message: string): unknown }, response: { statusCode: number, headers: Record<string, unknown>, json: () => any }, what: string): void {
  t.equal(response.statusCode, 403, what)
  t.equal(response.json().error?.code, 'REAUTHENTICATION_REQUIRED', what)
  t.equal(response.headers['www-authenticate'], REAUTHENTICATION_CHALLENGE, `${what}: RFC 9470's challenge`)
}

async function call (app: FastifyInstance, account: Account, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  return await app.inject(withToken(account.token, { method, url, ...(payload !== undefined && { payload: payload as Record<string, unknown> }) }))
}

for (const backend of backends()) {
  t.test(`account assurance attacks (${backend.name})`, async (t) => {
    t.test('pre-account takeover through a provider that did not verify the address: the owner\'s reset claims the account and the attacker\'s identity is gone', async (t) => {
      const smtp = await mailServer(t)
      const { provider, env } = await providerFor(t, 'microsoft', REDIRECT)
      const app = await build(t, { postgresUrl: backend.url, env: { ...env, SMTP_URL: smtp.url() } })
      const victim = uniqueEmail('victim')
      const attacker = { sub: 'attacker-subject', email: victim, email_verified: false, name: 'Attacker' }
      const first = await providerSignIn(app, provider, attacker)
      t.equal(first.statusCode, 200, 'the provider creates an unclaimed account')
      const registration = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: victim, name: 'Victim', password: TEST_PASSWORD } })
      t.equal(registration.statusCode, 409)
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: victim } })).statusCode, 202)
      const reset = await smtp.next((mail) => mail.to.includes(victim) && mail.subject.startsWith('Reset'))
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(reset), password: 'victim-owns-this-1' } })).statusCode, 204)
      const notice = await smtp.next((mail) => mail.to.includes(victim) && mail.subject === 'Your e-mail address was confirmed for your account')
      t.match(notice.text, /1 linked sign-in provider/)
      const again = await providerSignIn(app, provider, attacker)
      t.equal(again.statusCode, 409, 'the attacker\'s identity no longer signs in, nor links again')
      t.equal(again.json().error.code, 'EMAIL_ALREADY_REGISTERED')
      const me = await app.inject(withToken(first.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 401, 'the attacker\'s session ended with the claim')
    })

    t.test('a provider that did not verify the address never links to an existing account', async (t) => {
      const { provider, env } = await providerFor(t, 'microsoft', REDIRECT)
      const app = await build(t, { postgresUrl: backend.url, env })
      const owner = await createAccount(app)
      const attempt = await providerSignIn(app, provider, { sub: 'stranger', email: owner.email, email_verified: false })
      t.equal(attempt.statusCode, 409)
      t.same((await app.inject(withToken(owner.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data, [])
    })

    t.test('an unclaimed account gets no passkey, TOTP or code factor (403 EMAIL_NOT_VERIFIED), whatever EMAIL_VERIFICATION says', async (t) => {
      for (const mode of ['off', 'optional'] as const) {
        const app = await build(t, { postgresUrl: backend.url, env: { EMAIL_VERIFICATION: mode } })
        const squatter = await createAccount(app, { verified: false })
        for (const [url, payload] of [['/api/v1/auth/passkeys/registration/options', undefined], ['/api/v1/auth/mfa/totp/setup', undefined], ['/api/v1/auth/mfa/sms/enable', {}]] as const) {
          const refused = await call(app, squatter, 'POST', url, payload)
          t.equal(refused.statusCode, 403, `${mode}: ${url}`)
          t.equal(refused.json().error.code, 'EMAIL_NOT_VERIFIED', `${mode}: ${url}`)
        }
      }
    })

    t.test('ADMIN_EMAIL names an account someone else registered: at start-up it is claimed for the operator, not promoted as it is', async (t) => {
      const env = { ADMIN_EMAIL: uniqueEmail('operator'), ADMIN_PASSWORD: 'operator-password-1' }
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const before = await build(t, { databaseUrl })
      const squatter = await before.inject({ method: 'POST', url: '/api/v1/users', payload: { email: env.ADMIN_EMAIL, name: 'Squatter', password: TEST_PASSWORD } })
      t.equal(squatter.statusCode, 201)
      const squatterSession = (await before.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: env.ADMIN_EMAIL, password: TEST_PASSWORD } })).json().data
      await before.close()
      const app = await build(t, { databaseUrl, env })
      const login = async (password: string) => await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: env.ADMIN_EMAIL, password } })
      t.equal((await login(TEST_PASSWORD)).statusCode, 401, 'the squatter\'s password is gone')
      const operator = await login(env.ADMIN_PASSWORD)
      t.equal(operator.statusCode, 200, 'ADMIN_PASSWORD signs in')
      t.ok((claimsOf(operator.json().data.access_token).roles as string[]).includes('super_admin'))
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: squatterSession.refresh_token } })).statusCode, 401, 'the squatter\'s session ended')
    })

    t.test('with nothing but a fresh access token, no change to how the account signs in is made (RFC 9470 challenge, the proofs listed)', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const victim = await createAccount(app, { reauthenticated: false })
      const attempts: Array<[string, 'POST' | 'PATCH' | 'DELETE', string, unknown]> = [
        ['change the e-mail address', 'PATCH', `/api/v1/users/${victim.id}`, { email: uniqueEmail('attacker') }],
        ['replace the phone number', 'PATCH', `/api/v1/users/${victim.id}`, { phone: '+15555550199' }],
        ['turn codes by e-mail off', 'DELETE', '/api/v1/auth/mfa/email', undefined],
        ['turn codes by e-mail on', 'POST', '/api/v1/auth/mfa/email/enable', {}],
        ['enrol the attacker\'s TOTP', 'POST', '/api/v1/auth/mfa/totp/enable', { code: '123456' }]
      ]
      for (const [what, method, url, payload] of attempts) assertReauthenticationRequired(t, await call(app, victim, method, url, payload), what)
      const admin = await createAccount(app, { roles: ['admin'], reauthenticated: false })
      assertReauthenticationRequired(t, await call(app, admin, 'DELETE', `/api/v1/users/${admin.id}`), 'delete one\'s own account')
      const refused = await call(app, victim, 'PATCH', `/api/v1/users/${victim.id}`, { email: uniqueEmail('attacker') })
      t.same(refused.json().error.details.map((offer: { proof: string }) => offer.proof), ['password'], 'the proofs this account can give')
      t.equal((await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data.email, victim.email, 'nothing changed')

      const withProof = await call(app, victim, 'PATCH', `/api/v1/users/${victim.id}`, { phone: '+15555550199', current_password: TEST_PASSWORD })
      t.equal(withProof.statusCode, 200, 'the password beside the change is its proof')
      const stepUp = await call(app, victim, 'POST', '/api/v1/auth/reauthenticate', { password: TEST_PASSWORD })
      t.equal(stepUp.statusCode, 200)
      t.equal(stepUp.json().data.expires_in, 300)
      t.equal((await call(app, victim, 'PATCH', `/api/v1/users/${victim.id}`, { phone: '+15555550198' })).statusCode, 200, 'then the session changes without one')
    })

    t.test('an account with TOTP proves a factor: a password step-up is refused, a code is taken; a refresh keeps auth_time and amr', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = (await call(app, account, 'POST', '/api/v1/auth/mfa/totp/setup')).json().data as { secret: string }
      const enabled = await call(app, account, 'POST', '/api/v1/auth/mfa/totp/enable', { code: generateSync({ secret }) })
      t.equal(enabled.statusCode, 200)
      const challenge = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const [backupCode] = enabled.json().data.backup_codes as string[]
      const pair = (await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: backupCode } })).json().data
      const session = { ...account, token: pair.access_token as string }
      t.match(claimsOf(session.token), { amr: ['pwd', 'otp', 'mfa'], auth_time: Number })
      const passwordOnly = await call(app, session, 'POST', '/api/v1/auth/reauthenticate', { password: TEST_PASSWORD })
      assertReauthenticationRequired(t, passwordOnly, 'a password step-up')
      t.same(passwordOnly.json().error.details.map((offer: { proof: string }) => offer.proof), ['totp', 'backup_code'])
      assertReauthenticationRequired(t, await call(app, session, 'PATCH', `/api/v1/users/${account.id}`, { phone: '+15555550197', current_password: TEST_PASSWORD }), 'a change with the password only')
      t.equal((await call(app, session, 'PATCH', `/api/v1/users/${account.id}`, { phone: '+15555550197', mfa_code: generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }) })).statusCode, 200, 'a TOTP code beside the change')
      const refreshed = (await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: pair.refresh_token } })).json().data
      t.same({ auth_time: claimsOf(refreshed.access_token).auth_time, amr: claimsOf(refreshed.access_token).amr }, { auth_time: claimsOf(session.token).auth_time, amr: ['pwd', 'otp', 'mfa'] }, 'a refresh proves nothing new')
    })

    t.test('an MFA challenge opened with a password is refused once the password changed', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = (await call(app, account, 'POST', '/api/v1/auth/mfa/totp/setup')).json().data as { secret: string }
      const [backupCode] = (await call(app, account, 'POST', '/api/v1/auth/mfa/totp/enable', { code: generateSync({ secret }) })).json().data.backup_codes as string[]
      const stolen = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const owner = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const signedIn = (await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: owner.mfa_token, code: backupCode } })).json().data
      const changed = await app.inject(withToken(signedIn.access_token, {
        method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { password: 'owner-new-password-1', current_password: TEST_PASSWORD, mfa_code: generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }) }
      }))
      t.equal(changed.statusCode, 200)
      const answered = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: stolen.mfa_token, code: '000000' } })
      t.equal(answered.statusCode, 401)
      t.equal(answered.json().error.code, 'INVALID_TOKEN')
    })
  })
}
