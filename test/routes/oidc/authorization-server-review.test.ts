/**
 * What a review of the authorization server from outside found (docs/security.md, "Authorization
 * server"): each finding as the request that showed it, with what is answered now.
 */
import { createHash } from 'node:crypto'
import { generateSync } from 'otplib'
import * as client from 'openid-client'
import t from 'tap'
import { PAGE_CSP } from '../../../src/authorization-server/pages.js'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import {
  authorizeWithPassword, CookieBrowser, exchange, formToken, insecure, pkceAuthorization, refusal, relyingParty,
  startAuthorizationServer
} from '../../helpers/authorization-server.js'
import { backends } from '../../helpers/database.js'

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

for (const backend of backends()) {
  t.test(`the authorization server's review findings (${backend.name})`, async (t) => {
    t.test('an account whose role must use MFA and has no second factor signs in to no application until it enrols one', async (t) => {
      const server = await startAuthorizationServer(t, backend.url, { MFA_REQUIRED_ROLES: 'admin' })
      const { app, issuer } = server
      const { redirectUri, config } = await relyingParty(t, server, { name: 'Admin console', grant_types: ['authorization_code'], scopes: ['openid'] })
      const admin = await createAccount(app, { roles: ['admin'] })
      const read = await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${admin.id}` }))
      t.equal(read.json().error.code, 'MFA_ENROLLMENT_REQUIRED', 'the API answers its token with the enrolment it owes')

      const request = await pkceAuthorization(config, redirectUri, 'openid')
      const browser = new CookieBrowser(issuer)
      const login = await browser.follow(request.url.href)
      const refused = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: admin.email, password: admin.password } })
      t.equal(refused.response.status, 400, 'the pages refuse the sign-in too')
      t.ok(refused.url.startsWith(`${issuer}/`), 'no code goes to the application')
      t.match(await refused.response.text(), /requires two-step verification, which this account has not set up yet/)
      await app.auditTrail.flush()
      const failure = await app.database.db.selectFrom('audit_logs').select('details')
        .where('event', '=', 'auth.login_failed').where('target_id', '=', admin.id).executeTakeFirst()
      t.match(JSON.parse(failure?.details ?? '{}'), { reason: 'mfa_enrollment_required', through: 'authorization_server' })

      // Enrolled (the one change its token may make), it signs in with the second factor: acr 2.
      const setup = await app.inject(withToken(admin.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/setup' }))
      const secret = setup.json().data.secret as string
      const enabled = await app.inject(withToken(admin.token, { method: 'POST', url: '/api/v1/auth/mfa/totp/enable', payload: { code: generateSync({ secret }) } }))
      t.equal(enabled.statusCode, 200)
      const again = await pkceAuthorization(config, redirectUri, 'openid')
      const page = await browser.follow(again.url.href)
      const challenge = await browser.follow(`${page.url}/login`, { form: { csrf: formToken(await page.response.text()), email: admin.email, password: admin.password } })
      const html = await challenge.response.text()
      const carried = Object.fromEntries(['csrf', 'mfa_token', 'methods'].map((name) => [name, new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '']))
      const code = generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 })
      const consent = await browser.follow(`${page.url}/mfa`, { form: { ...carried, code } })
      const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
      const tokens = await exchange(config, new URL(allowed.url), again)
      t.match(tokens.claims(), { sub: admin.id, acr: '2', amr: ['pwd', 'otp', 'mfa'] }, 'acr and amr say what was proved')
    })

    t.test('RP-initiated logout: staying signed in changes nothing; signing out is the form\'s button', async (t) => {
      const server = await startAuthorizationServer(t, backend.url)
      const { app, issuer } = server
      const { rp, redirectUri, registered, config } = await relyingParty(t, server, { name: 'Notes', grant_types: ['authorization_code'], scopes: ['openid'] })
      const person = await createAccount(app)
      const browser = new CookieBrowser(issuer)
      const first = await pkceAuthorization(config, redirectUri, 'openid')
      const back = await authorizeWithPassword(browser, first.url.href, person)
      const tokens = await exchange(config, new URL(back), first)
      const grants = async () => (await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/grants' }))).json().data as Array<{ client_id: string }>
      t.equal((await grants()).length, 1)

      const end = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out`, state: 'xyz' })
      const page = await browser.follow(end.href)
      const html = await page.response.text()
      t.equal(page.response.headers.get('content-security-policy'), PAGE_CSP, 'the pages\' CSP')
      t.match(html, /<form method="post" action="[^"]*\/session\/end\/confirm"><input type="hidden" name="xsrf" value="[^"]+">\n<button type="submit" name="logout" value="yes">Sign out<\/button>\n<\/form>/,
        'the sign-out button inside its form')
      const stay = /<a href="([^"]+)">Stay signed in<\/a>/.exec(html)?.[1]?.replaceAll('&amp;', '&')
      t.equal(stay, `${rp}/signed-out?state=xyz`, 'staying is a link back to the application, with its state')
      const prompted = await pkceAuthorization(config, redirectUri, 'openid', { prompt: 'none' })
      t.match((await browser.follow(prompted.url.href)).url, new RegExp(`^${redirectUri}\\?code=`), 'still signed in')
      t.same((await grants()).map((grant) => grant.client_id), [registered.id], 'and the application\'s consent is kept')
    })

    t.test('the provider\'s own pages (errors, device, sign-out) carry the pages\' strict CSP; the device page\'s field is labelled, without an inline handler', async (t) => {
      const server = await startAuthorizationServer(t, backend.url)
      const { issuer } = server
      const error = await fetch(`${issuer}/oidc/auth?client_id=nobody&response_type=code&scope=openid`, { headers: { accept: 'text/html' } })
      t.equal(error.status, 400)
      t.equal(error.headers.get('content-security-policy'), PAGE_CSP, 'the error page')
      const device = await fetch(`${issuer}/oidc/device`)
      t.equal(device.headers.get('content-security-policy'), PAGE_CSP, 'the device page')
      const html = await device.text()
      t.match(html, /<form method="post" action="[^"]*\/oidc\/device"><input type="hidden" name="xsrf" value="[^"]+">\n<label>Code <input name="user_code"/, 'the field inside its label, inside the form')
      t.notMatch(html, /\son[a-z]+=/, 'no inline event handler')
      t.notMatch(html, /<script/, 'no script')
    })

    t.test('response_mode=form_post: the self-submitting form\'s one script is allowed by its hash, nothing else', async (t) => {
      const server = await startAuthorizationServer(t, backend.url)
      const { issuer } = server
      const { redirectUri, config } = await relyingParty(t, server, { name: 'Posted', grant_types: ['authorization_code'], scopes: ['openid'] })
      const person = await createAccount(server.app)
      const browser = new CookieBrowser(issuer)
      const first = await pkceAuthorization(config, redirectUri, 'openid')
      await authorizeWithPassword(browser, first.url.href, person)
      const posted = await pkceAuthorization(config, redirectUri, 'openid', { response_mode: 'form_post' })
      const { response } = await browser.follow(posted.url.href)
      const page = await response.text()
      const script = /<script>([\s\S]*?)<\/script>/.exec(page)?.[1] ?? ''
      t.match(page, `action="${redirectUri}"`, 'the code is posted to the application')
      t.equal(response.headers.get('content-security-policy'), `${PAGE_CSP};script-src 'sha256-${createHash('sha256').update(script).digest('base64')}'`)
    })

    t.test('the device grant: an interval to poll at, slow_down when polled faster, and user-code guesses in the sign-in tier', async (t) => {
      const server = await startAuthorizationServer(t, backend.url, { RATE_LIMIT_AUTH_MAX: '3' })
      const { issuer } = server
      const cli = await server.register({ name: 'Command line', confidential: false, grant_types: [DEVICE_GRANT], scopes: ['openid'] })
      const config = await client.discovery(new URL(issuer), cli.id, undefined, client.None(), insecure)
      const device = await client.initiateDeviceAuthorization(config, { scope: 'openid' })
      t.equal(device.interval, 5, 'the answer says how often to poll (RFC 8628, 3.2)')
      const poll = async () => await (await fetch(`${issuer}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: DEVICE_GRANT, device_code: device.device_code, client_id: cli.id })
      })).json() as { error: string, error_description: string }
      t.equal((await poll()).error, 'authorization_pending', 'the first poll: pending')
      const fast = await poll()
      t.equal(fast.error, 'slow_down', 'polled again at once: slow down (RFC 8628, 3.5)')
      t.match(fast.error_description, /wait 10 seconds/, 'the interval grew by 5 seconds')
      t.equal((await poll()).error, 'slow_down', 'and again, while the device keeps polling too fast')

      const address = '192.0.2.77'
      const guess = async () => await server.app.inject({
        method: 'POST', url: '/oidc/device', remoteAddress: address, payload: 'user_code=AAAA-AAAA&xsrf=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }
      })
      const answers = [await guess(), await guess(), await guess(), await guess()]
      t.same(answers.map((answer) => answer.statusCode === 429), [false, false, false, true], 'the fourth guess in the window is refused: the sign-in tier (RATE_LIMIT_AUTH_MAX)')
      t.same(answers.slice(0, 3).map((answer) => [answer.statusCode, answer.headers.location]), Array(3).fill([303, `${issuer}/oidc/device`]),
        'a form posted without the page\'s session is sent to a fresh form, not a server error')
      const fresh = await server.app.inject({ method: 'GET', url: '/oidc/device' })
      t.equal(fresh.statusCode, 200)
      t.match(fresh.body, /<input[^>]*name="user_code"/, 'where the code is entered again')
    })

    t.test('client credentials: a scope the server does not know is invalid_scope; a machine client needs no redirect URI', async (t) => {
      const server = await startAuthorizationServer(t, backend.url)
      const machine = await server.register({ name: 'Nightly job', grant_types: ['client_credentials'], scopes: ['api:read'] })
      const secret = client.ClientSecretBasic(machine.secret)
      const config = await client.discovery(new URL(server.issuer), machine.id, undefined, secret, insecure)
      t.equal((await client.clientCredentialsGrant(config, { scope: 'api:read' })).scope, 'api:read')
      t.match(await refusal(client.clientCredentialsGrant(config, { scope: 'api:read api:everything' })), { error: 'invalid_scope' }, 'an unknown scope is refused, not dropped')
      t.match(await refusal(client.clientCredentialsGrant(config, { scope: 'api:write' })), { error: 'invalid_scope' }, 'a known scope the client was not given too')
      const stored = await server.app.database.db.selectFrom('authorization_artifacts').select('model')
        .where('client_id', '=', machine.id).where('model', '=', 'ClientCredentials').execute()
      t.equal(stored.length, 1, 'the refused requests left no token behind')
    })
  })
}

t.test('rate tiers a set-up script fits in: reads under /auth and of OAuth clients are general; sign-ins and client changes are not', async (t) => {
  const app = await build(t, { env: { RATE_LIMIT_AUTH_MAX: '2', RATE_LIMIT_ADMIN_MAX: '2', RATE_LIMIT_MAX: '100', JWT_ISSUER: 'https://id.example.com' } })
  const admin = await createAccount(app, { roles: ['super_admin'] })
  const address = '198.51.100.9'
  const as = (method: 'GET' | 'POST', url: string, payload?: object) => app.inject(withToken(admin.token, { method, url, remoteAddress: address, ...(payload !== undefined && { payload }) }))
  for (let index = 0; index < 4; index++) {
    t.equal((await as('GET', '/api/v1/auth/me')).statusCode, 200, `/auth/me, read ${index + 1}: the general tier`)
    t.equal((await as('GET', '/api/v1/oauth-clients')).statusCode, 200, `the clients, read ${index + 1}: the general tier`)
  }
  const machine = { name: 'Job', grant_types: ['client_credentials'], scopes: ['openid'] }
  t.equal((await as('POST', '/api/v1/oauth-clients', machine)).statusCode, 201)
  t.equal((await as('POST', '/api/v1/oauth-clients', machine)).statusCode, 201)
  t.equal((await as('POST', '/api/v1/oauth-clients', machine)).statusCode, 429, 'registrations are admin operations')
  const login = () => app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: address, payload: { email: admin.email, password: admin.password } })
  await login()
  await login()
  t.equal((await login()).statusCode, 429, 'sign-ins keep their tier')
})
