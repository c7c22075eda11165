import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { type Account, claimsOf, createAccount, providerSignIn, TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { mailServer, tokenIn } from '../../helpers/servers/mail-server.js'
import { providerFor } from '../../helpers/servers/oauth-provider.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

const REDIRECT = 'http://127.0.0.1:3000/callback'
const REAUTHENTICATION_CHALLENGE = 'Bearer error="insufficient_user_authentication"'

/** Asserts the refusal of a change made with an access token alone. */
function assertReauthenticationRequired (
  t: { equal (found: unknown, wanted: unknown, message: string): unknown },
  response: { statusCode: number, headers: Record<string, unknown>, json: () => any },
  what: string
): void {
  t.equal(response.statusCode, 403, what)
  t.equal(response.json().error?.code, 'REAUTHENTICATION_REQUIRED', what)
  t.equal(response.headers['www-authenticate'], REAUTHENTICATION_CHALLENGE, `${what}: RFC 9470's challenge`)
}

async function call (app: FastifyInstance, account: Account, method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) {
  const body = payload === undefined ? {} : { payload: payload as Record<string, unknown> }
  return await app.inject(withToken(account.token, { method, url, ...body }))
}

/** The proofs a REAUTHENTICATION_REQUIRED refusal offers, in its order. */
function proofsOffered (response: { json: () => any }): string[] {
  return response.json().error.details.map((offer: { proof: string }) => offer.proof)
}

/** A new session of the account, signed in with its password (no step-up): its access token. */
async function freshSession (app: FastifyInstance, account: Account): Promise<Account> {
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
  if (login.statusCode !== 200 || login.json().data.access_token === undefined) throw new Error(`no session: ${login.body}`)
  return { ...account, token: login.json().data.access_token }
}

/** Registers a passkey on `authenticator` for the session of `account` (which must have stepped up). */
async function addPasskey (app: FastifyInstance, account: Account, authenticator: SoftwareAuthenticator) {
  const options = await call(app, account, 'POST', '/api/v1/auth/passkeys/registration/options')
  const created = await call(app, account, 'POST', '/api/v1/auth/passkeys', { response: authenticator.register(options.json().data) })
  if (created.statusCode !== 201) throw new Error(`no passkey: ${created.body}`)
  return created.json().data as { id: string, name: string }
}

/** Fresh passkey authentication options (for `email`'s account when given). */
async function passkeyOptions (app: FastifyInstance, email?: string) {
  const answer = await app.inject({ method: 'POST', url: '/api/v1/auth/passkeys/authentication/options', payload: email === undefined ? {} : { email } })
  return answer.json().data as { challenge_id: string, options: { challenge: string } }
}

/** A six-digit code that is none of `taken`: a wrong code, for sure. */
function codeOtherThan (taken: string[]): string {
  for (let candidate = 0; ; candidate++) {
    const code = String(candidate).padStart(6, '0')
    if (!taken.includes(code)) return code
  }
}

for (const backend of backends()) {
  t.test(`account assurance attacks (${backend.name})`, async (t) => {
    t.test('pre-account takeover through a provider that did not verify the address: the owner\'s reset claims the account and the attacker\'s identity is gone, with EMAIL_VERIFICATION optional or required', async (t) => {
      for (const mode of ['optional', 'required'] as const) {
        const smtp = await mailServer(t)
        const { provider, env } = await providerFor(t, 'microsoft', REDIRECT)
        const app = await build(t, {
          postgresUrl: backend.url, env: { ...env, SMTP_URL: smtp.url(), EMAIL_VERIFICATION: mode }
        })
        const victim = uniqueEmail('victim')
        const attacker = { sub: 'attacker-subject', email: victim, email_verified: false, name: 'Attacker' }
        const first = await providerSignIn(app, provider, attacker)
        if (mode === 'optional') {
          t.equal(first.statusCode, 200, `${mode}: the provider creates an unclaimed account`)
        } else {
          t.equal(first.json().error?.code, 'EMAIL_NOT_VERIFIED', `${mode}: the account is created, unclaimed, and does not sign in`)
        }
        const registration = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: victim, name: 'Victim', password: TEST_PASSWORD } })
        t.equal(registration.statusCode, 409, `${mode}: the victim's registration finds the address taken`)
        t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: victim } })).statusCode, 202)
        const reset = await smtp.next((mail) => mail.to.includes(victim) && mail.subject.startsWith('Reset'))
        const resetAnswer = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(reset), password: 'victim-owns-this-1' } })
        t.equal(resetAnswer.statusCode, 204)
        const notice = await smtp.next((mail) => mail.to.includes(victim) && mail.subject === 'Your e-mail address was confirmed for your account')
        t.match(notice.text, /1 linked sign-in provider/, `${mode}: the owner is told what was removed`)
        const again = await providerSignIn(app, provider, attacker)
        t.equal(again.statusCode, 409, `${mode}: the attacker's identity no longer signs in, nor links again`)
        t.equal(again.json().error.code, 'EMAIL_ALREADY_REGISTERED')
        const owner = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: victim, password: 'victim-owns-this-1' } })
        t.equal(owner.statusCode, 200, `${mode}: the owner signs in`)
        const identities = await app.inject(withToken(owner.json().data.access_token, { method: 'GET', url: '/api/v1/auth/identities' }))
        t.same(identities.json().data, [], `${mode}: no identity is left linked`)
        if (mode === 'optional') {
          const me = await app.inject(withToken(first.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
          t.equal(me.statusCode, 401, 'the attacker\'s session ended with the claim')
        }
      }
    })

    t.test('a provider that did not verify the address never links to an existing account', async (t) => {
      const { provider, env } = await providerFor(t, 'microsoft', REDIRECT)
      const app = await build(t, { postgresUrl: backend.url, env })
      const owner = await createAccount(app)
      const attempt = await providerSignIn(app, provider, { sub: 'stranger', email: owner.email, email_verified: false })
      t.equal(attempt.statusCode, 409)
      t.same((await app.inject(withToken(owner.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data, [])
    })

    t.test('an unclaimed account gets no passkey, TOTP or code factor (403 EMAIL_NOT_VERIFIED), with EMAIL_VERIFICATION off, optional or required', async (t) => {
      for (const mode of ['off', 'optional', 'required'] as const) {
        // Under `required` an unclaimed account does not sign in: its token is one issued
        // before the operator switched to `required`, on the same database.
        const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
        const before = await build(t, { databaseUrl, env: { EMAIL_VERIFICATION: mode === 'required' ? 'optional' : mode } })
        const squatter = await createAccount(before, { verified: false })
        let app = before
        if (mode === 'required') {
          await before.close()
          app = await build(t, { databaseUrl, env: { EMAIL_VERIFICATION: mode } })
          const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: squatter.email, password: TEST_PASSWORD } })
          t.equal(login.json().error?.code, 'EMAIL_NOT_VERIFIED', 'required: the squatter signs in no more')
        }
        const enrolments = [
          ['/api/v1/auth/passkeys/registration/options', undefined],
          ['/api/v1/auth/mfa/totp/setup', undefined],
          ['/api/v1/auth/mfa/sms/enable', {}],
          ['/api/v1/auth/mfa/email/enable', {}]
        ] as const
        for (const [url, payload] of enrolments) {
          const refused = await call(app, squatter, 'POST', url, payload)
          t.equal(refused.statusCode, 403, `${mode}: ${url}`)
          t.equal(refused.json().error.code, 'EMAIL_NOT_VERIFIED', `${mode}: ${url}`)
        }
        const principal = await app.repositories.users.findPrincipal(squatter.id)
        t.match(principal, { mfaEnabled: false, hasPasskey: false, messageFactors: [] }, `${mode}: nothing was enrolled`)
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
      for (const [what, method, url, payload] of attempts) {
        assertReauthenticationRequired(t, await call(app, victim, method, url, payload), what)
      }
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

    t.test('with nothing but a fresh access token, no passkey is added (RFC 9470 challenge), renamed or removed, no SMS codes turned on or off, no identity unlinked', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const victim = await createAccount(app, { reauthenticated: false })
      // What the owner attached earlier (in the store): a passkey, a phone number, a linked identity.
      const passkey = await app.repositories.passkeys.add(victim.id, { credentialId: `owner-${victim.id}`, publicKey: 'AAAA', counter: 0, transports: [], name: 'Owner key' })
      await app.repositories.users.update(victim.id, { phone: '+15555550111' })
      await app.repositories.identities.link('github', `owner-${victim.id}`, victim.id, victim.email)
      const [identity] = (await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data as Array<{ id: string }>

      const options = await call(app, victim, 'POST', '/api/v1/auth/passkeys/registration/options')
      t.equal(options.statusCode, 200, 'options are no change')
      const added = await call(app, victim, 'POST', '/api/v1/auth/passkeys', { response: new SoftwareAuthenticator().register(options.json().data) })
      assertReauthenticationRequired(t, added, 'add the attacker\'s passkey')
      t.same(proofsOffered(added), ['passkey'], 'an account with a passkey proves a factor: the password is not offered')
      assertReauthenticationRequired(t, await call(app, victim, 'PATCH', `/api/v1/auth/passkeys/${passkey.id}`, { name: 'Attacker' }), 'rename the owner\'s passkey')
      assertReauthenticationRequired(t, await call(app, victim, 'DELETE', `/api/v1/auth/passkeys/${passkey.id}`), 'remove the owner\'s passkey')
      assertReauthenticationRequired(t, await call(app, victim, 'POST', '/api/v1/auth/mfa/sms/enable', {}), 'turn SMS codes on')
      await app.repositories.users.setMessageFactor(victim.id, 'sms', new Date().toISOString())
      assertReauthenticationRequired(t, await call(app, victim, 'DELETE', '/api/v1/auth/mfa/sms'), 'turn SMS codes off')
      assertReauthenticationRequired(t, await call(app, victim, 'DELETE', `/api/v1/auth/identities/${identity?.id ?? ''}`), 'unlink the owner\'s identity')

      const passkeys = (await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/passkeys' }))).json().data
      t.match(passkeys, [{ id: passkey.id, name: 'Owner key' }], 'the owner\'s passkey, and no other')
      t.equal(passkeys.length, 1)
      t.same((await app.repositories.users.findPrincipal(victim.id))?.messageFactors, ['sms'], 'SMS codes still on')
      t.equal((await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data.length, 1, 'the identity still linked')
    })

    t.test('new backup codes and turning TOTP off take a code of the factor: a missing or wrong one is refused and nothing changes', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const { secret } = (await call(app, account, 'POST', '/api/v1/auth/mfa/totp/setup')).json().data as { secret: string }
      const backupCodes = (await call(app, account, 'POST', '/api/v1/auth/mfa/totp/enable', { code: generateSync({ secret }) })).json().data.backup_codes as string[]
      const challenge = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: backupCodes[0] } })
      const session = { ...account, token: verified.json().data.access_token as string }
      const now = Math.floor(Date.now() / 1000)
      const current = [-30, 0, 30].map((offset) => generateSync({ secret, epoch: now + offset }))
      const wrong = codeOtherThan([...backupCodes, ...current])
      const guarded = [['POST', '/api/v1/auth/mfa/backup-codes'], ['DELETE', '/api/v1/auth/mfa/totp']] as const
      for (const [method, url] of guarded) {
        for (const payload of [{}, { current_password: TEST_PASSWORD }]) {
          const missing = await call(app, session, method, url, payload)
          t.equal(missing.statusCode, 400, `${method} ${url} without a code`)
          t.equal(missing.json().error.code, 'VALIDATION_FAILED')
        }
        const refused = await call(app, session, method, url, { code: wrong })
        t.equal(refused.statusCode, 401, `${method} ${url} with a wrong code`)
        t.equal(refused.json().error.code, 'INVALID_MFA_CODE')
      }
      const me = await app.inject(withToken(session.token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.same(me.json().data.mfa_methods, ['totp'], 'TOTP is still on')
      const next = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const old = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: next.mfa_token, code: backupCodes[1] } })
      t.equal(old.statusCode, 200, 'the backup codes were not replaced')
    })

    t.test('an account whose only second factor is a passkey steps up with a passkey assertion, not its password, then makes a sensitive change', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(app, account, authenticator)
      const session = await freshSession(app, account)
      const passwordOnly = await call(app, session, 'POST', '/api/v1/auth/reauthenticate', { password: TEST_PASSWORD })
      assertReauthenticationRequired(t, passwordOnly, 'a password step-up')
      t.same(proofsOffered(passwordOnly), ['passkey'], 'the passkey is offered, the password not')
      const beside = await call(app, session, 'PATCH', `/api/v1/users/${account.id}`, { phone: '+15555550196', current_password: TEST_PASSWORD })
      assertReauthenticationRequired(t, beside, 'the password beside the change')

      const stranger = await createAccount(app)
      const strangersKey = new SoftwareAuthenticator()
      await addPasskey(app, stranger, strangersKey)
      const foreign = await passkeyOptions(app)
      const foreignStepUp = await call(app, session, 'POST', '/api/v1/auth/reauthenticate', { passkey: { challenge_id: foreign.challenge_id, response: strangersKey.assert(foreign.options) } })
      t.equal(foreignStepUp.statusCode, 401, 'another account\'s passkey proves nothing for this session')
      t.equal(foreignStepUp.json().error.code, 'INVALID_CREDENTIALS')

      const { challenge_id: challengeId, options } = await passkeyOptions(app, account.email)
      const stepUp = await call(app, session, 'POST', '/api/v1/auth/reauthenticate', { passkey: { challenge_id: challengeId, response: authenticator.assert(options) } })
      t.equal(stepUp.statusCode, 200, 'the passkey\'s assertion is the proof')
      t.equal(stepUp.json().data.expires_in, 300)
      const changed = await call(app, session, 'PATCH', `/api/v1/users/${account.id}`, { phone: '+15555550196' })
      t.equal(changed.statusCode, 200, 'then the session makes a sensitive change')
      await app.auditTrail.flush()
      const entries = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.reauthenticated').where('actor_id', '=', account.id).execute()
      t.same(entries.map((entry) => JSON.parse(entry.details)), [{ method: 'passkey' }], 'audited with its method')
    })

    t.test('the verification link\'s claim ends what the first registrant held: the access token, the refresh token, an open MFA challenge, codes by e-mail', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const email = uniqueEmail('victim')
      const registered = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'First Registrant', password: TEST_PASSWORD } })
      const id = registered.json().data.id as string
      const login = async () => (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })).json().data
      const session = await login()
      // Factors an earlier version let the first registrant enrol: TOTP and codes by e-mail.
      await app.repositories.mfa.enable(id, 'sealed-secret', ['hash-1'], new Date().toISOString())
      await app.repositories.users.setMessageFactor(id, 'email', new Date().toISOString())
      const challenge = await login()
      t.same(challenge.methods, ['totp', 'backup_code', 'email'])

      const link = await smtp.next((mail) => mail.to.includes(email) && mail.subject.startsWith('Verify'))
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(link) } })).statusCode, 200)
      const notice = await smtp.next((mail) => mail.to.includes(email) && mail.subject === 'Your e-mail address was confirmed for your account')
      t.match(notice.text, /sign-in codes by e-mail/)

      const me = await app.inject(withToken(session.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 401, 'the access token issued before the claim is refused')
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: session.refresh_token } })).statusCode, 401, 'so is its refresh token')
      const code = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: challenge.mfa_token, method: 'email' } })
      t.equal(code.json().error?.code, 'INVALID_TOKEN', 'the challenge sends no code')
      const answer = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: '000000' } })
      t.equal(answer.json().error?.code, 'INVALID_TOKEN', 'nor is answered')
      const owner = await login()
      t.ok('access_token' in owner, 'the owner signs in with no factor of the registrant\'s')
      const mine = await app.inject(withToken(owner.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.same(mine.json().data.mfa_methods, [], 'codes by e-mail are off, as TOTP')
    })
  })
}
