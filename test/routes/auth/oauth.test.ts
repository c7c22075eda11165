import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { generateSync } from 'otplib'
import { createAccount, stateCookie, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build, redisReady } from '../../helpers/app.js'
import type { TestContext } from '../../helpers/context.js'
import { backends } from '../../helpers/database.js'
import { MAX_PROVIDER_ANSWER_BYTES } from '../../../src/federation/client.js'
import { providerFor as providerAt, type TestProvider } from '../../helpers/servers/oauth-provider.js'

const REDIRECT = 'http://127.0.0.1:3000/callback'

async function providerFor (t: TestContext, key: 'google' | 'github' | 'microsoft') {
  return await providerAt(t, key, REDIRECT)
}

/** The browser's part: follow /authorize, "approve" at the provider, come back to /callback. */
async function signIn (app: FastifyInstance, provider: TestProvider, key: string, profile: Record<string, unknown>, emails?: unknown[], extra = '') {
  const authorize = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${key}/authorize` })
  if (authorize.statusCode !== 302) throw new Error(authorize.body)
  const location = new URL(String(authorize.headers.location))
  const state = location.searchParams.get('state') ?? ''
  const code = provider.approve(location.searchParams.get('code_challenge') ?? '', profile, emails)
  const cookie = stateCookie(authorize)
  const callback = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${key}/callback?code=${code}&state=${state}${extra}`, headers: { cookie } })
  return { authorize, location, state, code, cookie, callback }
}

/** The state cookie /authorize set, as the browser that started the flow sends it back. */
/** /authorize, for a flow that goes no further than the provider: its state and the browser's cookie. */
async function started (app: FastifyInstance, key: string) {
  const authorize = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${key}/authorize` })
  return { state: new URL(String(authorize.headers.location)).searchParams.get('state') ?? '', cookie: stateCookie(authorize) }
}

const userCount = async (app: FastifyInstance) => Number((await app.database.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)

for (const backend of backends()) {
  t.test(backend.name, async (t) => {
    t.test('authorize: code flow parameters, state and PKCE S256; Google adds offline consent', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const response = await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/Google/authorize' })
      t.equal(response.statusCode, 302)
      const location = new URL(String(response.headers.location))
      t.equal(`${location.origin}${location.pathname}`, `${provider.base}/authorize`)
      const params = Object.fromEntries(location.searchParams)
      t.match(params, {
        client_id: 'google-client',
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid email profile',
        code_challenge_method: 'S256',
        access_type: 'offline',
        prompt: 'consent'
      })
      t.match(params.state, /^[A-Za-z0-9_-]{43}$/)
      t.match(params.code_challenge, /^[A-Za-z0-9_-]{43}$/)
      t.equal(response.headers['x-frame-options'], 'DENY', 'security headers on redirects too')
    })

    for (const key of ['google', 'github', 'microsoft'] as const) {
      t.test(`${key}: the happy path creates a user with role user, then signs the same user in`, async (t) => {
        const { provider, env } = await providerFor(t, key)
        const app = await build(t, { postgresUrl: backend.url, env })
        const email = uniqueEmail(key)
        const profile = key === 'github'
          ? { id: 4242, login: 'octo', name: 'Octo Cat', email: null }
          : { sub: `${key}-subject-1`, email, email_verified: key === 'google', name: 'Ada Provider' }
        const emails = key === 'github' ? [{ email: 'old@example.com', primary: false, verified: true }, { email, primary: true, verified: true }] : undefined
        const { callback } = await signIn(app, provider, key, profile, emails)
        t.equal(callback.statusCode, 200, callback.body)
        const pair = callback.json().data
        t.equal(pair.token_type, 'Bearer')
        const me = (await app.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data
        t.equal(me.email, email)
        t.same(me.roles, ['user'])
        const tokenCall = provider.requests.find((request) => request.path === '/token')
        if (key === 'github') t.equal(tokenCall?.headers.accept, 'application/json', 'GitHub is asked for JSON')
        t.match(tokenCall?.body, /code_verifier=/)

        const again = await signIn(app, provider, key, profile, emails)
        t.equal(again.callback.statusCode, 200)
        const meAgain = (await app.inject(withToken(again.callback.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data
        t.equal(meAgain.id, me.id, 'the linked identity signs in the same user')
        const identities = await app.database.db.selectFrom('user_identities').selectAll().execute()
        t.equal(identities.length, 1)
        t.match(identities[0], { provider: key, user_id: me.id })
      })
    }

    t.test('an e-mail verified on both sides links to the existing account; unverified on either side it does not', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const account = await createAccount(app)
      // Claimed, its address unverified again as after a change of address (an unclaimed account is claimed instead:
      // test/routes/auth/account-assurance.test.ts).
      await app.database.db.updateTable('users').set({ email_verified: 0 }).where('id', '=', account.id).execute()
      const localUnverified = await signIn(app, provider, 'google', { sub: 'g-1', email: account.email, email_verified: true, name: 'X' })
      t.equal(localUnverified.callback.statusCode, 409, 'the local account\'s address is not verified: someone else may have typed it in')
      t.equal(localUnverified.callback.json().error.code, 'EMAIL_ALREADY_REGISTERED')
      t.equal(await app.database.db.selectFrom('user_identities').selectAll().execute().then((rows) => rows.length), 0, 'nothing linked')
      await app.repositories.users.markEmailVerified(account.id, account.email)
      const unverified = await signIn(app, provider, 'google', { sub: 'g-1', email: account.email, email_verified: false, name: 'X' })
      t.equal(unverified.callback.statusCode, 409)
      t.equal(unverified.callback.json().error.code, 'EMAIL_ALREADY_REGISTERED')
      const verified = await signIn(app, provider, 'google', { sub: 'g-1', email: account.email.toUpperCase(), email_verified: true, name: 'X' })
      t.equal(verified.callback.statusCode, 200)
      const me = (await app.inject(withToken(verified.callback.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).json().data
      t.equal(me.id, account.id)
      const before = await userCount(app)
      t.equal((await signIn(app, provider, 'google', { sub: 'g-1', email: 'changed@example.com', email_verified: true })).callback.statusCode, 200)
      t.equal(await userCount(app), before, 'the linked subject wins over a changed e-mail')
    })

    t.test('the callback ignores the parameters providers add, known or not', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const extra = '&scope=email+openid&authuser=0&hd=example.com&prompt=none&session_state=abc.def&error_uri=x&something_new=%00%FF&iss=https%3A%2F%2Faccounts.google.com'
      const { callback } = await signIn(app, provider, 'google', { sub: 'extra', email: uniqueEmail(), email_verified: true }, undefined, extra)
      t.equal(callback.statusCode, 200, callback.body)
      t.equal(callback.json().data.token_type, 'Bearer')
    })

    t.test('state: reused, unknown, missing, expired, from another provider, or not this browser\'s → 400', async (t) => {
      const google = await providerFor(t, 'google')
      const github = await providerFor(t, 'github')
      const app = await build(t, { postgresUrl: backend.url, env: { ...google.env, ...github.env } })
      const profile = { sub: 's', email: uniqueEmail(), email_verified: true }
      const first = await signIn(app, google.provider, 'google', profile)
      t.equal(first.callback.statusCode, 200)
      t.match(first.callback.headers['set-cookie'], /^oauth_state=; Max-Age=0; Path=\/api\/v1\/auth\/oauth; Expires=[^;]+; HttpOnly; SameSite=Lax$/, 'the callback clears the cookie')
      const call = (key: string, query: string, cookie: string) => app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${key}/callback?${query}`, headers: { cookie } })
      const invalid = async (label: string, key: string, query: string, cookie: string) => {
        const response = await call(key, query, cookie)
        t.equal(response.statusCode, 400, label)
        t.equal(response.json().error.code, 'INVALID_OAUTH_STATE', label)
      }
      await invalid('reused', 'google', `code=${first.code}&state=${first.state}`, first.cookie)
      const tampered = `${first.state.slice(0, -2)}zz`
      await invalid('tampered', 'google', `code=x&state=${tampered}`, `oauth_state=${tampered}`)
      await invalid('missing', 'google', 'code=x', first.cookie)
      const crossed = await started(app, 'github')
      await invalid('another provider\'s state', 'google', `code=x&state=${crossed.state}`, crossed.cookie)

      // Login CSRF: an attacker's own state and code, in a victim's browser.
      const attackers = await started(app, 'google')
      const victims = await started(app, 'google')
      await invalid('without the cookie', 'google', `code=x&state=${attackers.state}`, '')
      await invalid('with another flow\'s cookie', 'google', `code=x&state=${attackers.state}`, victims.cookie)
      const code = google.provider.approve('unused', profile)
      t.equal((await call('google', `code=${code}&state=${attackers.state}`, attackers.cookie)).statusCode, 502,
        'a refused browser does not spend the state: its own browser still finishes the flow (here, to the provider\'s refusal)')

      if (app.redis === null) {
        const stale = await started(app, 'google')
        await app.database.db.updateTable('oauth_states').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute()
        await invalid('expired (10 minutes)', 'google', `code=x&state=${stale.state}`, stale.cookie)
      }
    })

    t.test('provider failures answer 502 and create nothing', async (t) => {
      const { provider, env } = await providerFor(t, 'github')
      const app = await build(t, { postgresUrl: backend.url, env })
      const before = await userCount(app)
      for (const mode of ['token-4xx', 'token-5xx', 'token-error-200', 'userinfo-5xx'] as const) {
        provider.mode = mode
        const { callback } = await signIn(app, provider, 'github', { id: 1, login: 'x' }, [{ email: uniqueEmail(), primary: true, verified: true }])
        t.equal(callback.statusCode, 502, mode)
        t.equal(callback.json().error.code, 'OAUTH_PROVIDER_ERROR', mode)
        t.notMatch(callback.body, /client_secret|github-secret/)
      }
      provider.mode = 'ok'
      const flow = await started(app, 'github')
      const code = provider.approve('not-the-challenge', { id: 2, login: 'y' }, [{ email: uniqueEmail(), primary: true, verified: true }])
      const mismatch = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/github/callback?code=${code}&state=${flow.state}`, headers: { cookie: flow.cookie } })
      t.equal(mismatch.statusCode, 502, 'PKCE mismatch: the provider refuses the exchange')
      const refused = await started(app, 'github')
      const error = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/github/callback?error=server_error&error_uri=https%3A%2F%2Fexample.com&state=${refused.state}`, headers: { cookie: refused.cookie } })
      t.equal(error.statusCode, 502, 'a provider error other than the user\'s refusal')
      const cancelled = await started(app, 'github')
      const denied = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/github/callback?error=access_denied&error_description=The+user+has+denied&state=${cancelled.state}`, headers: { cookie: cancelled.cookie } })
      t.equal(denied.statusCode, 401, 'the user cancelled at the provider')
      t.same(denied.json(), { error: { code: 'OAUTH_ACCESS_DENIED', message: 'Sign-in cancelled at the provider' } })
      t.equal(await userCount(app), before, 'no user was created')
    })

    t.test('a provider answer over 1 MiB is refused with 502, declared or streamed, and creates nothing', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const before = await userCount(app)
      const profile = { sub: 'padded', email: uniqueEmail(), email_verified: true }
      provider.oversizedBytes = MAX_PROVIDER_ANSWER_BYTES
      for (const mode of ['userinfo-oversized', 'userinfo-oversized-streamed'] as const) {
        provider.mode = mode
        const { callback } = await signIn(app, provider, 'google', profile)
        t.equal(callback.statusCode, 502, mode)
        t.equal(callback.json().error.code, 'OAUTH_PROVIDER_ERROR', mode)
        t.match(callback.json().error.message, /more than 1048576 bytes/, mode)
      }
      t.equal(await userCount(app), before, 'no user was created')
      provider.oversizedBytes = MAX_PROVIDER_ANSWER_BYTES - 1
      const { callback } = await signIn(app, provider, 'google', profile)
      t.equal(callback.statusCode, 200, 'an answer of exactly the limit is read')
    })

    t.test('a profile is kept only in shapes a user may have: a bad subject or e-mail is 502, control characters leave the name', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const before = await userCount(app)
      const refused: Array<[string, Record<string, unknown>]> = [
        ['U+0000 in the subject', { sub: 'a\u0000b', email: uniqueEmail(), email_verified: true }],
        ['a subject over 255 characters', { sub: 's'.repeat(256), email: uniqueEmail(), email_verified: true }],
        ['an e-mail that is not an address', { sub: 'not-an-address', email: 'not-an-address', email_verified: true }],
        ['U+0000 in the e-mail', { sub: 'nul-in-email', email: `a\u0000${uniqueEmail()}`, email_verified: true }]
      ]
      for (const [what, profile] of refused) {
        const { callback } = await signIn(app, provider, 'google', profile)
        t.equal(callback.statusCode, 502, what)
        t.equal(callback.json().error.code, 'OAUTH_PROVIDER_ERROR', what)
      }
      t.equal(await userCount(app), before, 'no user was created')
      const email = uniqueEmail()
      const { callback } = await signIn(app, provider, 'google', { sub: 'control', email, email_verified: true, name: '\u0000Ada\u0007\nLovelace\u0000' })
      t.equal(callback.statusCode, 200)
      t.equal((await app.repositories.users.findByEmail(email))?.name, 'Ada Lovelace')
      const linkedAgain = await signIn(app, provider, 'google', { sub: 'control', email: 'no longer an address', email_verified: true })
      t.equal(linkedAgain.callback.statusCode, 200, 'a linked user signs in whatever e-mail the provider now reports')
      const emoji = '\u{1F600}'
      const long = uniqueEmail()
      t.equal((await signIn(app, provider, 'google', { sub: 'emoji', email: long, email_verified: true, name: emoji.repeat(101) })).callback.statusCode, 200)
      t.equal((await app.repositories.users.findByEmail(long))?.name, emoji.repeat(100), 'cut at 100 code points, never inside one')
    })

    t.test('a provider that does not answer times out after 5 s with 502', async (t) => {
      const { provider, env } = await providerFor(t, 'microsoft')
      const app = await build(t, { postgresUrl: backend.url, env })
      provider.mode = 'token-timeout'
      const started = Date.now()
      const { callback } = await signIn(app, provider, 'microsoft', { sub: 'm', email: uniqueEmail(), email_verified: true })
      const elapsed = Date.now() - started
      t.equal(callback.statusCode, 502)
      t.match(callback.json().error.message, /timed out/)
      t.ok(elapsed >= 4900 && elapsed < 8000, `gave up after ${elapsed} ms`)
    })

    t.test('unknown and unconfigured providers are 404 UNSUPPORTED_PROVIDER', async (t) => {
      const { env } = await providerFor(t, 'github')
      const app = await build(t, { postgresUrl: backend.url, env })
      for (const key of ['facebook', 'google', '__proto__']) {
        const response = await app.inject({ method: 'GET', url: `/api/v1/auth/oauth/${key}/authorize` })
        t.equal(response.statusCode, 404, key)
        t.same(response.json(), { error: { code: 'UNSUPPORTED_PROVIDER', message: `Unsupported OAuth2 provider: ${key}` } })
      }
      t.equal((await app.inject({ method: 'GET', url: '/api/v1/auth/oauth/GITHUB/authorize' })).statusCode, 302, 'keys are case-insensitive')
    })

    t.test('a locked account is locked for OAuth sign-in too', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const account = await createAccount(app)
      await app.repositories.users.markEmailVerified(account.id, account.email)
      t.equal((await signIn(app, provider, 'google', { sub: 'g-locked', email: account.email, email_verified: true })).callback.statusCode, 200, 'linked')
      for (let n = 0; n < 5; n++) {
        await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: 'wrong-password' } })
      }
      const { callback } = await signIn(app, provider, 'google', { sub: 'g-locked', email: account.email, email_verified: true })
      t.equal(callback.statusCode, 423)
      t.same(callback.json().error.code, 'ACCOUNT_LOCKED')
    })

    t.test('MFA applies to OAuth sign-in', async (t) => {
      const { provider, env } = await providerFor(t, 'google')
      const app = await build(t, { postgresUrl: backend.url, env })
      const account = await createAccount(app)
      await app.repositories.users.markEmailVerified(account.id, account.email)
      const setup = (await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))).json().data
      await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret: setup.secret }) } }))
      const { callback } = await signIn(app, provider, 'google', { sub: 'g-mfa', email: account.email, email_verified: true })
      t.equal(callback.statusCode, 200)
      t.equal(callback.json().data.mfa_required, true)
    })
  })
}

const redisUrl = process.env.TEST_REDIS_URL
if (redisUrl !== undefined && redisUrl !== '') {
  t.test('with Redis, state lives there: one instance starts the flow, another finishes it, once', async (t) => {
    const { provider, env } = await providerFor(t, 'google')
    const first = await build(t, { env: { ...env, REDIS_URL: redisUrl } })
    const second = await build(t, { env: { ...env, REDIS_URL: redisUrl } })
    await redisReady(first, second)
    const authorize = await first.inject({ method: 'GET', url: '/api/v1/auth/oauth/google/authorize' })
    const location = new URL(String(authorize.headers.location))
    const state = location.searchParams.get('state') ?? ''
    const code = provider.approve(location.searchParams.get('code_challenge') ?? '', { sub: 'r', email: uniqueEmail(), email_verified: true })
    const finish = () => second.inject({ method: 'GET', url: `/api/v1/auth/oauth/google/callback?code=${code}&state=${state}`, headers: { cookie: stateCookie(authorize) } })
    t.equal((await finish()).statusCode, 200)
    t.equal((await finish()).statusCode, 400, 'single use')
  })
}
