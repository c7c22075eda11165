import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { mailServer } from '../../helpers/servers/mail-server.js'
import { type Account, createAccount, stepUpWithEmailCode, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build, redisReady } from '../../helpers/app.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

const BASE = '/api/v1/auth/passkeys'

async function addPasskey (app: FastifyInstance, token: string, authenticator: SoftwareAuthenticator, name?: string) {
  const options = await app.inject(withToken(token, { method: 'POST', url: `${BASE}/registration/options` }))
  if (options.statusCode !== 200) throw new Error(options.body)
  const created = await app.inject(withToken(token, { method: 'POST', url: BASE, payload: { response: authenticator.register(options.json().data), ...(name !== undefined && { name }) } }))
  if (created.statusCode !== 201) throw new Error(created.body)
  return created.json().data as { id: string, name: string }
}

async function authenticationOptions (app: FastifyInstance, email?: string) {
  const answer = await app.inject({ method: 'POST', url: `${BASE}/authentication/options`, payload: email === undefined ? {} : { email } })
  if (answer.statusCode !== 200) throw new Error(answer.body)
  return answer.json().data as {
    challenge_id: string
    options: { challenge: string, allowCredentials?: Array<{ id: string }> }
  }
}

function authenticate (app: FastifyInstance, payload: unknown) {
  return app.inject({ method: 'POST', url: `${BASE}/authentication`, payload: payload as Record<string, unknown> })
}

/** The audit rows of one event, once the trail has written them. */
async function audited (app: FastifyInstance, event: string) {
  await app.auditTrail.flush()
  const rows = await app.database.db.selectFrom('audit_logs').selectAll().where('event', '=', event).orderBy('created_at').execute()
  return rows.map((row) => ({ ...row, details: JSON.parse(row.details) as Record<string, unknown> }))
}

const INVALID_CREDENTIALS = { error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } }

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('register, list, sign out, sign in with a discoverable passkey, read /auth/me', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const authenticator = new SoftwareAuthenticator()
      const options = await app.inject(withToken(account.token, { method: 'POST', url: `${BASE}/registration/options` }))
      t.equal(options.statusCode, 200)
      t.match(options.json().data, {
        challenge: /^[A-Za-z0-9_-]+$/,
        rp: { id: 'localhost', name: 'Users API' },
        user: { name: account.email, displayName: 'Test User' },
        timeout: 300000,
        attestation: 'none',
        authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' }
      })
      t.same(options.json().data.pubKeyCredParams, [-8, -7, -257].map((alg) => ({ alg, type: 'public-key' })),
        'EdDSA, ES256, RS256 on every runtime: not the ML-DSA the library adds on Node.js 24')
      const created = await app.inject(withToken(account.token, { method: 'POST', url: BASE, payload: { response: authenticator.register(options.json().data, { attestation: 'packed' }), name: 'Laptop' } }))
      t.equal(created.statusCode, 201)
      t.match(created.json(), { data: { id: String, name: 'Laptop', created_at: String, last_used_at: null } })
      t.same(Object.keys(created.json().data).sort(), ['created_at', 'id', 'last_used_at', 'name'], 'no key material leaves')

      const list = await app.inject(withToken(account.token, { method: 'GET', url: BASE }))
      t.equal(list.statusCode, 200)
      t.match(list.json(), { data: [{ id: created.json().data.id, name: 'Laptop' }], meta: { total: 1 } })

      t.equal((await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/logout' }))).statusCode, 204)
      const { challenge_id: challengeId, options: requestOptions } = await authenticationOptions(app)
      t.same(requestOptions.allowCredentials, [])
      const signedIn = await authenticate(app, {
        challenge_id: challengeId,
        response: authenticator.assert(requestOptions)
      })
      t.equal(signedIn.statusCode, 200)
      t.match(signedIn.json(), { data: { token_type: 'Bearer', access_token: String, refresh_token: String } })
      const me = await app.inject(withToken(signedIn.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 200)
      t.equal(me.json().data.id, account.id)
      t.match(await audited(app, 'auth.login'), [{ details: { method: 'password' } }, { actor_id: account.id, details: { method: 'passkey' } }])
      t.match(await audited(app, 'passkey.added'), [{ target_id: account.id }])
    })

    t.test('refused assertions are 401 INVALID_CREDENTIALS: replayed challenge, wrong origin, counter backwards, another user\'s passkey, tampered signature', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const alice = await createAccount(app)
      const bob = await createAccount(app)
      const alices = new SoftwareAuthenticator()
      const bobs = new SoftwareAuthenticator()
      await addPasskey(app, alice.token, alices)
      await addPasskey(app, bob.token, bobs)

      const first = await authenticationOptions(app, alice.email)
      const assertion = alices.assert(first.options, { counter: 10 })
      t.equal((await authenticate(app, { challenge_id: first.challenge_id, response: assertion })).statusCode, 200)
      const replay = await authenticate(app, { challenge_id: first.challenge_id, response: assertion })
      t.equal(replay.statusCode, 401)
      t.same(replay.json(), INVALID_CREDENTIALS)

      const refused = async (
        what: string,
        make: (options: { challenge: string, allowCredentials?: Array<{ id: string }> }) => unknown
      ) => {
        const { challenge_id: challengeId, options } = await authenticationOptions(app, alice.email)
        const answer = await authenticate(app, { challenge_id: challengeId, response: make(options) })
        t.equal(answer.statusCode, 401, what)
        t.same(answer.json(), INVALID_CREDENTIALS, what)
      }
      await refused('wrong origin', (options) => alices.assert(options, { origin: 'http://localhost:3001' }))
      await refused('wrong RP ID', (options) => alices.assert(options, { rpId: 'example.com' }))
      await refused('counter backwards', (options) => alices.assert(options, { counter: 9 }))
      await refused('another user\'s passkey', (options) => bobs.assert({ ...options, allowCredentials: [] }))
      await refused('tampered signature', (options) => {
        const tampered = alices.assert(options)
        tampered.response.signature = Buffer.from('not a signature').toString('base64url')
        return tampered
      })
      await refused('garbage authenticator data', (options) => {
        const garbage = alices.assert(options)
        garbage.response.authenticatorData = 'AAAA'
        return garbage
      })
      t.equal((await audited(app, 'auth.login_failed')).length, 7)
    })

    t.test('bad registrations are 400 without a stored passkey; malformed, oversized and unexpected bodies get the error envelope', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      const authenticator = new SoftwareAuthenticator()
      const options = (await app.inject(withToken(account.token, { method: 'POST', url: `${BASE}/registration/options` }))).json().data
      const wrongOrigin = await app.inject(withToken(account.token, { method: 'POST', url: BASE, payload: { response: authenticator.register(options, { origin: 'https://evil.example' }) } }))
      t.equal(wrongOrigin.statusCode, 400)
      t.match(wrongOrigin.json(), { error: { code: 'VALIDATION_FAILED', details: [{ path: '/response' }] } })
      const replayed = await app.inject(withToken(account.token, { method: 'POST', url: BASE, payload: { response: authenticator.register(options) } }))
      t.equal(replayed.statusCode, 400, 'the challenge was spent by the refused attempt')

      const fresh = (await app.inject(withToken(account.token, { method: 'POST', url: `${BASE}/registration/options` }))).json().data
      const garbage = authenticator.register(fresh)
      garbage.response.attestationObject = Buffer.from('definitely not CBOR').toString('base64url')
      const notCbor = await app.inject(withToken(account.token, { method: 'POST', url: BASE, payload: { response: garbage } }))
      t.equal(notCbor.statusCode, 400)
      t.equal(notCbor.json().error.code, 'VALIDATION_FAILED')

      const post = (url: string, payload: string, token?: string) => app.inject({
        method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...(token !== undefined && { authorization: `Bearer ${token}` }) }
      })
      for (const [url, token] of [[BASE, account.token], [`${BASE}/authentication`, undefined], [`${BASE}/authentication/options`, undefined]] as const) {
        const malformed = await post(url, '{"response": {', token)
        t.equal(malformed.statusCode, 400, `${url}: malformed JSON`)
        t.equal(malformed.json().error.code, 'VALIDATION_FAILED')
        const oversized = await post(url, JSON.stringify({ response: { id: 'A'.repeat(11_000) } }), token)
        t.equal(oversized.statusCode, 413, `${url}: oversized`)
        t.equal(oversized.json().error.code, 'PAYLOAD_TOO_LARGE')
      }
      const notBase64 = await authenticate(app, { challenge_id: 'x', response: { id: 'a b', rawId: 'a b', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: '{}', authenticatorData: 'AA', signature: 'AA' } } })
      t.equal(notBase64.statusCode, 400)
      t.equal(notBase64.json().error.code, 'VALIDATION_FAILED')
      const unknownKey = await authenticate(app, { challenge_id: 'x', response: {}, extra: true })
      t.equal(unknownKey.statusCode, 400)
      const badEmail = await app.inject({ method: 'POST', url: `${BASE}/authentication/options`, payload: { email: 'not an address' } })
      t.equal(badEmail.statusCode, 400)
      const clientData = await authenticate(app, {
        challenge_id: (await authenticationOptions(app)).challenge_id,
        response: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', clientExtensionResults: {}, response: { clientDataJSON: 'AAAA', authenticatorData: 'AAAA', signature: 'AAAA' } }
      })
      t.same(clientData.json(), INVALID_CREDENTIALS, 'a well-formed body with nonsense inside is a refused assertion')
      t.same((await app.inject(withToken(account.token, { method: 'GET', url: BASE }))).json().data, [], 'nothing was stored')
    })

    t.test('rename and remove: own passkeys only; the last way to sign in is kept (409)', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const account = await createAccount(app)
      const stranger = await createAccount(app)
      const passkey = await addPasskey(app, account.token, new SoftwareAuthenticator())
      const renamed = await app.inject(withToken(account.token, { method: 'PATCH', url: `${BASE}/${passkey.id.toUpperCase()}`, payload: { name: 'YubiKey' } }))
      t.equal(renamed.statusCode, 200)
      t.match(renamed.json().data, { id: passkey.id, name: 'YubiKey' })
      t.equal((await app.inject(withToken(account.token, { method: 'PATCH', url: `${BASE}/${passkey.id}`, payload: { name: '' } }))).statusCode, 400)
      t.equal((await app.inject(withToken(stranger.token, { method: 'PATCH', url: `${BASE}/${passkey.id}`, payload: { name: 'Mine' } }))).statusCode, 404)
      t.equal((await app.inject(withToken(stranger.token, { method: 'DELETE', url: `${BASE}/${passkey.id}` }))).statusCode, 404)
      t.equal((await app.inject(withToken(account.token, { method: 'DELETE', url: `${BASE}/${passkey.id}` }))).statusCode, 204, 'the password remains')
      t.equal((await app.inject(withToken(account.token, { method: 'DELETE', url: `${BASE}/${passkey.id}` }))).statusCode, 404)

      const user = await app.repositories.users.create({ email: uniqueEmail('passwordless'), name: 'No Password', passwordHash: null, roles: ['user'], emailVerified: true })
      const signedIn = app.auditTrail.recorded({ ip: '127.0.0.1', userAgent: null, caller: null }, [{ event: 'auth.login', outcome: 'success', actorId: user.id, targetId: user.id }])
      const { access_token: token } = await app.services.sessions.start({ id: user.id, roles: ['user'] }, undefined, ['fed'], signedIn)
      await stepUpWithEmailCode(app, token, smtp, user.email)
      const only = await addPasskey(app, token, new SoftwareAuthenticator())
      const last = await app.inject(withToken(token, { method: 'DELETE', url: `${BASE}/${only.id}` }))
      t.equal(last.statusCode, 409)
      t.equal(last.json().error.code, 'CONFLICT')
      t.match(await audited(app, 'passkey.removed'), [{ target_id: account.id, details: { id: passkey.id } }])
    })

    t.test('with MFA required for admins, a passkey meets it: the routes open, and a password alone is sent to the passkey', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { MFA_REQUIRED_ROLES: 'admin' } })
      const admin: Account = await createAccount(app, { roles: ['admin'] })
      const users = () => app.inject(withToken(admin.token, { method: 'GET', url: '/api/v1/users' }))
      t.equal((await users()).json().error.code, 'MFA_ENROLLMENT_REQUIRED')
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(app, admin.token, authenticator)
      t.equal((await users()).statusCode, 200, 'enrolled by the passkey')
      const password = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: admin.email, password: admin.password } })
      t.match(password.json(), { data: { mfa_required: true, methods: ['passkey'] } })
      const { challenge_id: challengeId, options } = await authenticationOptions(app, admin.email)
      const withoutVerification = await authenticate(app, {
        challenge_id: challengeId,
        response: authenticator.assert(options, { userVerified: false })
      })
      t.match(withoutVerification.json(), { data: { mfa_required: true, methods: ['passkey'] } }, 'without user verification the passkey is one factor')
      const again = await authenticationOptions(app, admin.email)
      const signedIn = await authenticate(app, {
        challenge_id: again.challenge_id,
        response: authenticator.assert(again.options)
      })
      t.equal(signedIn.statusCode, 200)
      t.equal((await app.inject(withToken(signedIn.json().data.access_token, { method: 'GET', url: '/api/v1/users' }))).statusCode, 200)
    })
  })
}

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('with Redis, challenges are shared: options from one instance, the answer at another, once', async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, process.env.TEST_DATABASE_URL ?? null, { shared: true })
    const first = await build(t, { databaseUrl, env: { REDIS_URL: redisUrl } })
    const second = await build(t, { databaseUrl, env: { REDIS_URL: redisUrl } })
    await redisReady(first, second)
    const account = await createAccount(first)
    const authenticator = new SoftwareAuthenticator()
    const registration = (await first.inject(withToken(account.token, { method: 'POST', url: `${BASE}/registration/options` }))).json().data
    const created = await second.inject(withToken(account.token, { method: 'POST', url: BASE, payload: { response: authenticator.register(registration) } }))
    t.equal(created.statusCode, 201)
    const { challenge_id: challengeId, options } = await authenticationOptions(first, account.email)
    const response = authenticator.assert(options)
    t.equal((await authenticate(second, { challenge_id: challengeId, response })).statusCode, 200)
    t.equal((await authenticate(first, { challenge_id: challengeId, response })).statusCode, 401, 'single use')
    t.equal(await first.database.db.selectFrom('passkey_challenges').select('key_hash').executeTakeFirst(), undefined, 'none in the database')
  })
}
