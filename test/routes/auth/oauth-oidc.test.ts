import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { generateSync } from 'otplib'
import { mailServer } from '../../helpers/servers/mail-server.js'
import { createAccount, stateCookie, stepUpWithEmailCode, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build, redisReady } from '../../helpers/app.js'
import type { TestContext } from '../../helpers/context.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'
import { OpenIdTestProvider } from '../../helpers/servers/openid-provider.js'

const NAME = 'corp'
const REDIRECT = `http://127.0.0.1:3000/api/v1/auth/oauth/${NAME}/callback`
const APP = 'http://127.0.0.1:5173/signed-in'

async function openIdProvider (t: TestContext) {
  const provider = await new OpenIdTestProvider({ id: 'users-api', secret: 'users-api-secret', redirectUri: REDIRECT }).start()
  t.teardown(async () => await provider.stop())
  const env = {
    OAUTH_PROVIDERS: NAME,
    OAUTH_CORP_ISSUER: provider.issuer,
    OAUTH_CORP_CLIENT_ID: 'users-api',
    OAUTH_CORP_CLIENT_SECRET: 'users-api-secret',
    OAUTH_CORP_REDIRECT_URI: REDIRECT,
    OAUTH_REDIRECT_URLS: 'http://127.0.0.1:5173'
  }
  return { provider, env }
}

/** The state cookie /authorize set, as the browser sends it back. */

/** The whole flow: /authorize, the provider's login page as `login`, then the callback in the same browser. */
async function signIn (
  app: FastifyInstance,
  provider: OpenIdTestProvider,
  login: string | null,
  options: { query?: string, extra?: (back: URL) => void } = {}
) {
  const authorize = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/authorize${options.query ?? ''}` })
  if (authorize.statusCode !== 302) throw new Error(authorize.body)
  const back = await provider.signIn(String(authorize.headers.location), login)
  options.extra?.(back)
  const callback = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/callback${back.search}`, headers: { cookie: stateCookie(authorize) } })
  return { authorize, back, callback }
}

const me = async (app: FastifyInstance, token: string) => (await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data

function pkce () {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('authorize: discovery gives the endpoint; state, PKCE and nonce are sent; the state cookie is HttpOnly, Lax, scoped and short-lived', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const response = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME.toUpperCase()}/authorize` })
      t.equal(response.statusCode, 302, response.body)
      const location = new URL(String(response.headers.location))
      t.equal(`${location.origin}${location.pathname}`, `${provider.issuer}/auth`, 'the discovery document\'s authorization_endpoint')
      const params = Object.fromEntries(location.searchParams)
      t.match(params, { client_id: 'users-api', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid email profile', code_challenge_method: 'S256' })
      t.match(params.nonce, /^[A-Za-z0-9_-]{43}$/)
      const cookie = response.cookies.find((entry) => entry.name === 'oauth_state')
      t.match(cookie, { value: params.state, path: '/api/v1/auth/oauth', httpOnly: true, sameSite: 'Lax', maxAge: 600 })
    })

    t.test('sign-in with a real OpenID provider creates the user from the validated ID token, then signs the same user in', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const email = uniqueEmail('oidc')
      provider.accounts.set('ada', { email, email_verified: true, name: 'Ada Lovelace' })
      const first = await signIn(app, provider, 'ada')
      t.equal(first.back.searchParams.get('iss'), provider.issuer, 'the provider says who answers (iss)')
      t.equal(first.callback.statusCode, 200, first.callback.body)
      const user = await me(app, first.callback.json().data.access_token)
      t.match(user, { email, name: 'Ada Lovelace', email_verified: true, roles: ['user'] })
      const again = await signIn(app, provider, 'ada')
      t.equal(again.callback.statusCode, 200, again.callback.body)
      t.equal((await me(app, again.callback.json().data.access_token)).id, user.id)
      const identities = await app.database.db.selectFrom('user_identities').selectAll().execute()
      t.match(identities, [{ provider: NAME, subject: 'ada', user_id: user.id, email }])
    })

    t.test('linking by e-mail needs the provider\'s email_verified and a verified local address; unlinked otherwise', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const account = await createAccount(app)
      await app.repositories.users.markEmailVerified(account.id, account.email)
      provider.accounts.set('unverified', { email: account.email, email_verified: false })
      const refused = await signIn(app, provider, 'unverified')
      t.equal(refused.callback.statusCode, 409)
      t.equal(refused.callback.json().error.code, 'EMAIL_ALREADY_REGISTERED')
      t.equal((await app.database.db.selectFrom('user_identities').selectAll().execute()).length, 0, 'nothing linked')
      provider.accounts.set('verified', { email: account.email.toUpperCase(), email_verified: true })
      const linked = await signIn(app, provider, 'verified')
      t.equal(linked.callback.statusCode, 200, linked.callback.body)
      t.equal((await me(app, linked.callback.json().data.access_token)).id, account.id)
    })

    t.test('an admin signing in through the provider still answers the MFA challenge', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env: { ...env, MFA_REQUIRED_ROLES: 'admin' } })
      const admin = await createAccount(app, { roles: ['admin'] })
      await app.repositories.users.markEmailVerified(admin.id, admin.email)
      const setup = (await app.inject(withToken(admin.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))).json().data
      const enabled = await app.inject(withToken(admin.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret: setup.secret }) } }))
      t.equal(enabled.statusCode, 200)
      provider.accounts.set('admin', { email: admin.email, email_verified: true })
      const { callback } = await signIn(app, provider, 'admin')
      t.equal(callback.statusCode, 200, callback.body)
      const challenge = callback.json().data
      t.match(challenge, { mfa_required: true, methods: ['totp', 'backup_code'] })
      t.notOk('access_token' in challenge, 'no token before the second factor')
      const answered = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: generateSync({ secret: setup.secret, epoch: Date.now() / 1000 + 30 }) } })
      t.equal(answered.statusCode, 200, answered.body)
      const signedIn = await me(app, answered.json().data.access_token)
      t.match(signedIn, { id: admin.id, mfa_enabled: true })
      t.ok(signedIn.roles.includes('admin'), 'the admin account')
    })

    t.test('the response must come from the issuer (its iss); extra parameters are ignored', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      provider.accounts.set('iss', { email: uniqueEmail(), email_verified: true })
      const other = await signIn(app, provider, 'iss', { extra: (back) => back.searchParams.set('iss', 'https://attacker.example') })
      t.equal(other.callback.statusCode, 502, 'another issuer\'s response (mix-up)')
      t.equal(other.callback.json().error.code, 'OAUTH_PROVIDER_ERROR')
      const missing = await signIn(app, provider, 'iss', { extra: (back) => back.searchParams.delete('iss') })
      t.equal(missing.callback.statusCode, 502, 'the provider always sends iss (authorization_response_iss_parameter_supported)')
      const extras = await signIn(app, provider, 'iss', {
        extra: (back) => { for (const [name, value] of Object.entries({ hd: 'example.com', authuser: '1', prompt: 'consent', session_state: 's.t', brand_new: 'x' })) back.searchParams.set(name, value) }
      })
      t.equal(extras.callback.statusCode, 200, extras.callback.body)
    })

    t.test('cancelling at the provider answers 401 OAUTH_ACCESS_DENIED', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const { back, callback } = await signIn(app, provider, null)
      t.equal(back.searchParams.get('error'), 'access_denied')
      t.equal(callback.statusCode, 401)
      t.equal(callback.json().error.code, 'OAUTH_ACCESS_DENIED')
    })

    t.test('browser applications: redirect back with a one-time code, exchanged once with the PKCE verifier', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const email = uniqueEmail('spa')
      provider.accounts.set('spa', { email, email_verified: true })
      const { verifier, challenge } = pkce()
      const query = `?redirect_to=${encodeURIComponent(`${APP}?tab=1`)}&code_challenge=${challenge}&code_challenge_method=S256`
      const { callback } = await signIn(app, provider, 'spa', { query })
      t.equal(callback.statusCode, 302, callback.body)
      const back = new URL(String(callback.headers.location))
      t.equal(`${back.origin}${back.pathname}`, APP)
      t.equal(back.searchParams.get('tab'), '1', 'the application\'s own parameters are kept')
      const code = back.searchParams.get('code') ?? ''
      t.match(code, /^[A-Za-z0-9_-]{43}$/)
      const exchange = (body: Record<string, unknown>) => app.inject({ method: 'POST', url: '/api/v1/auth/oauth/exchange', payload: body })
      const pair = await exchange({ code, code_verifier: verifier })
      t.equal(pair.statusCode, 200, pair.body)
      t.match(await me(app, pair.json().data.access_token), { email })
      const reused = await exchange({ code, code_verifier: verifier })
      t.equal(reused.statusCode, 400, 'used')
      t.equal(reused.json().error.code, 'INVALID_OAUTH_STATE')

      const second = await signIn(app, provider, 'spa', { query })
      const secondCode = new URL(String(second.callback.headers.location)).searchParams.get('code') ?? ''
      const wrong = await exchange({ code: secondCode, code_verifier: pkce().verifier })
      t.equal(wrong.statusCode, 400, 'wrong verifier')
      t.equal(wrong.json().error.code, 'INVALID_OAUTH_STATE')
      t.equal((await exchange({ code: secondCode, code_verifier: verifier })).statusCode, 400, 'a code tried with a wrong verifier is spent')

      if (app.redis === null) {
        const third = await signIn(app, provider, 'spa', { query })
        const thirdCode = new URL(String(third.callback.headers.location)).searchParams.get('code') ?? ''
        await app.database.db.updateTable('oauth_exchange_codes').set({ expires_at: new Date(Date.now() - 1).toISOString() }).execute()
        t.equal((await exchange({ code: thirdCode, code_verifier: verifier })).statusCode, 400, 'expired (60 s)')
      }

      const cancelled = await signIn(app, provider, null, { query })
      t.equal(cancelled.callback.statusCode, 302)
      t.equal(new URL(String(cancelled.callback.headers.location)).searchParams.get('error'), 'OAUTH_ACCESS_DENIED', 'errors go back to the application too')
    })

    t.test('browser applications: redirect_to must start with an allowed URL, with an S256 challenge; none allowed when OAUTH_REDIRECT_URLS is unset', async (t) => {
      const { env } = await openIdProvider(t)
      const app = await build(t, { postgresUrl: backend.url, env })
      const { challenge } = pkce()
      const authorize = (query: string) => app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/authorize?${query}` })
      for (const target of ['http://127.0.0.1:5173.evil.example/', 'http://127.0.0.1:5174/', 'http://127.0.0.1:5173@evil.example/', 'javascript:alert(1)', '/relative']) {
        const response = await authorize(`redirect_to=${encodeURIComponent(target)}&code_challenge=${challenge}&code_challenge_method=S256`)
        t.equal(response.statusCode, 400, target)
        t.match(response.json().error, { code: 'VALIDATION_FAILED', details: [{ path: '/redirect_to' }] }, target)
      }
      const noChallenge = await authorize(`redirect_to=${encodeURIComponent(APP)}`)
      t.match(noChallenge.json().error, { code: 'VALIDATION_FAILED', details: [{ path: '/code_challenge' }, { path: '/code_challenge_method' }] })
      t.equal((await authorize(`redirect_to=${encodeURIComponent(APP)}&code_challenge=${challenge}&code_challenge_method=plain`)).statusCode, 400, 'plain is refused')
      t.equal((await authorize(`redirect_to=${encodeURIComponent(APP)}&code_challenge=${challenge}&code_challenge_method=S256`)).statusCode, 302)

      const off = await build(t, { postgresUrl: backend.url, env: { ...env, OAUTH_REDIRECT_URLS: '' } })
      const refused = await off.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/authorize?redirect_to=${encodeURIComponent(APP)}&code_challenge=${challenge}&code_challenge_method=S256` })
      t.equal(refused.statusCode, 400)
      t.equal(refused.json().error.code, 'VALIDATION_FAILED')
    })

    t.test('identities: listed, unlinked, and the last way to sign in is kept (409)', async (t) => {
      const { provider, env } = await openIdProvider(t)
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { ...env, SMTP_URL: smtp.url() } })
      provider.accounts.set('only', { email: uniqueEmail(), email_verified: true })
      const { callback } = await signIn(app, provider, 'only')
      const token = callback.json().data.access_token
      // Unlinking is a sensitive change: this provider-only account proves itself by a code to its address.
      await stepUpWithEmailCode(app, token, smtp, (await me(app, token)).email)
      const list = await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/identities' }))
      t.equal(list.statusCode, 200)
      const identities = list.json().data
      t.match(identities, [{ id: /^[0-9a-f-]{36}$/, provider: NAME, created_at: /^\d{4}-/ }])
      t.same(Object.keys(identities[0]).sort(), ['created_at', 'id', 'provider'], 'nothing else (no subject, no e-mail)')
      const last = await app.inject(withToken(token, { method: 'DELETE', url: `/api/v1/auth/identities/${identities[0].id}` }))
      t.equal(last.statusCode, 409)
      t.equal(last.json().error.code, 'CONFLICT')

      // A second identity, then both unlinked at once: one goes, the last stays.
      const userId = (await me(app, token)).id
      await app.repositories.identities.link('github', '4242', userId, null)
      const both = (await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data
      t.equal(both.length, 2)
      const together = await Promise.all(both.map((identity: { id: string }) => app.inject(withToken(token, { method: 'DELETE', url: `/api/v1/auth/identities/${identity.id}` }))))
      t.same(together.map((response) => response.statusCode).sort(), [204, 409], 'concurrent unlinks never take the last one')

      const other = await createAccount(app)
      const foreign = await app.inject(withToken(other.token, { method: 'DELETE', url: `/api/v1/auth/identities/${identities[0].id}` }))
      t.equal(foreign.statusCode, 404, 'another user\'s identity is not found')

      await app.repositories.users.markEmailVerified(other.id, other.email)
      provider.accounts.set('other', { email: other.email, email_verified: true })
      t.equal((await signIn(app, provider, 'other')).callback.statusCode, 200)
      const otherIdentities = (await app.inject(withToken(other.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data
      t.equal(otherIdentities.length, 1)
      const unlinked = await app.inject(withToken(other.token, { method: 'DELETE', url: `/api/v1/auth/identities/${otherIdentities[0].id}` }))
      t.equal(unlinked.statusCode, 204, 'an account with a password may drop its last identity')
      const audited = await app.database.db.selectFrom('audit_logs').selectAll().where('event', '=', 'identity.unlinked').where('target_id', '=', other.id).execute()
      t.match(audited, [{ actor_id: other.id, outcome: 'success', details: /"provider":"corp"/ }], 'audited')
      t.same((await app.inject(withToken(other.token, { method: 'GET', url: '/api/v1/auth/identities' }))).json().data, [])
    })
  })
}

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('with Redis, a browser application\'s flow may touch three instances: authorize on one, callback on another, exchange on a third, once', async (t) => {
    const { provider, env } = await openIdProvider(t)
    // One database, as instances share it; the flow's state and code are in Redis only.
    const databaseUrl = await freshDatabaseUrl(t, null, { shared: true })
    const [first, second, third] = [
      await build(t, { databaseUrl, env: { ...env, REDIS_URL: redisUrl } }),
      await build(t, { databaseUrl, env: { ...env, REDIS_URL: redisUrl } }),
      await build(t, { databaseUrl, env: { ...env, REDIS_URL: redisUrl } })
    ]
    await redisReady(first, second, third)
    provider.accounts.set('shared', { email: uniqueEmail('redis'), email_verified: true })
    const { verifier, challenge } = pkce()
    const authorize = await first.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/authorize?redirect_to=${encodeURIComponent(APP)}&code_challenge=${challenge}&code_challenge_method=S256` })
    const back = await provider.signIn(String(authorize.headers.location), 'shared')
    const callback = await second.inject({ method: 'GET', url: `/api/v1/auth/oauth/${NAME}/callback${back.search}`, headers: { cookie: stateCookie(authorize) } })
    t.equal(callback.statusCode, 302, callback.body)
    const code = new URL(String(callback.headers.location)).searchParams.get('code') ?? ''
    const exchange = async () => await third.inject({ method: 'POST', url: '/api/v1/auth/oauth/exchange', payload: { code, code_verifier: verifier } })
    t.equal((await exchange()).statusCode, 200)
    t.equal((await exchange()).statusCode, 400, 'single use')
    t.equal(await first.database.db.selectFrom('oauth_states').select('state_hash').executeTakeFirst(), undefined, 'no state in the database')
    t.equal(await first.database.db.selectFrom('oauth_exchange_codes').select('code_hash').executeTakeFirst(), undefined, 'no exchange code in the database')
  })
}
