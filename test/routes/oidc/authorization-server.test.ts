import * as client from 'openid-client'
import t from 'tap'
import { createAccount, TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import {
  authorizeWithPassword, callbackServer, CookieBrowser, exchange, formToken, insecure, pkceAuthorization,
  refusal, relyingParty, startAuthorizationServer
} from '../../helpers/authorization-server.js'
import { redisReady } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { MailServer, mailServer, tokenIn } from '../../helpers/servers/mail-server.js'
import { OpenIdTestProvider } from '../../helpers/servers/openid-provider.js'
import { APP_URL } from '../../helpers/organizations.js'
import { authnRequestOf } from '../../helpers/servers/saml-identity-provider.js'
import { SsoHarness, uniqueDomain } from '../../helpers/sso.js'

const PERSON_SCOPES = ['openid', 'profile', 'email', 'offline_access']

for (const backend of backends()) {
  t.test(`the authorization server, to a relying party (${backend.name})`, async (t) => {
    const server = await startAuthorizationServer(t, backend.url)
    const { app, issuer } = server
    const { rp, redirectUri, registered, config } = await relyingParty(t, server, {
      name: 'Relying party', grant_types: ['authorization_code', 'refresh_token', 'client_credentials'], scopes: [...PERSON_SCOPES, 'api:read']
    })
    const other = await server.register({
      name: 'Another application', redirect_uris: [`${rp}/other`], grant_types: ['authorization_code', 'refresh_token'], scopes: PERSON_SCOPES
    })
    const otherConfig = await client.discovery(new URL(issuer), other.id, other.secret, undefined, insecure)

    /** An authorization request of the relying party, its PKCE verifier and state. */
    async function authorization (options: { scope?: string, redirect?: string, extra?: Record<string, string> } = {}) {
      const request = await pkceAuthorization(config, options.redirect ?? redirectUri, options.scope ?? 'openid email profile offline_access', options.extra)
      return { ...request, url: request.url.href }
    }

    /** Signs `person` in through the pages and answers the tokens the relying party gets for the code. */
    async function signIn (person: { email: string, password: string }, browser = new CookieBrowser(issuer)) {
      const request = await authorization()
      const back = await authorizeWithPassword(browser, request.url, person)
      return await exchange(config, new URL(back), request)
    }

    t.test('discovery: the provider\'s whole document at the issuer, the service\'s own members kept', async (t) => {
      const answer = await fetch(`${issuer}/.well-known/openid-configuration`)
      t.equal(answer.status, 200)
      const document = await answer.json()
      t.match(document, {
        issuer,
        authorization_endpoint: `${issuer}/oidc/auth`,
        token_endpoint: `${issuer}/oidc/token`,
        userinfo_endpoint: `${issuer}/oidc/me`,
        introspection_endpoint: `${issuer}/oidc/token/introspection`,
        revocation_endpoint: `${issuer}/oidc/token/revocation`,
        device_authorization_endpoint: `${issuer}/oidc/device/auth`,
        end_session_endpoint: `${issuer}/oidc/session/end`,
        jwks_uri: `${issuer}/oidc/jwks`,
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
        response_types_supported: ['code'],
        login_endpoint: `${issuer}/api/v1/auth/login`,
        refresh_endpoint: `${issuer}/api/v1/auth/refresh`,
        logout_endpoint: `${issuer}/api/v1/auth/logout`
      })
      t.ok(document.grant_types_supported.includes('urn:ietf:params:oauth:grant-type:device_code'))
      t.ok(document.grant_types_supported.includes('client_credentials'))
      t.notOk(document.grant_types_supported.includes('implicit'))
      t.same(document.id_token_signing_alg_values_supported, ['RS256', 'ES256', 'EdDSA'], 'what ID tokens may be signed with, exactly: RS256 first')
      t.same(document.api_token_signing_alg_values_supported, ['HS256'], 'the API\'s own tokens\' algorithm in a member of its own')
      const jwks = await (await fetch(document.jwks_uri)).json()
      t.same(jwks.keys.map((key: { alg: string }) => key.alg), ['RS256', 'ES256', 'EdDSA'], 'under HS256: the ID-token keys only (the API\'s secret is never published)')
      t.ok(jwks.keys.every((key: Record<string, unknown>) => !('d' in key) && !('p' in key)), 'public keys')
    })

    t.test('authorization code with PKCE: the ID token, userinfo, a rotated refresh token, introspection, revocation', async (t) => {
      const person = await createAccount(app, { name: 'Ada Lovelace' })
      const request = await authorization()
      const back = await authorizeWithPassword(new CookieBrowser(issuer), request.url, person)
      t.match(back, new RegExp(`^${redirectUri}\\?code=[^&]+&state=${request.state}&iss=${encodeURIComponent(issuer)}`), 'iss in the response (RFC 9207)')
      const tokens = await exchange(config, new URL(back), request)
      const claims = tokens.claims()
      t.match(claims, { iss: issuer, sub: person.id, aud: registered.id, amr: ['pwd'], acr: '1', auth_time: Number })
      t.match(claims, { email: person.email, email_verified: true, name: 'Ada Lovelace' }, 'the profile in the ID token too, as most relying parties read it')
      t.equal(tokens.scope, 'openid email profile', 'offline_access only with prompt=consent (OpenID Connect Core 11)')
      t.type(tokens.refresh_token, 'string')

      const info = await client.fetchUserInfo(config, tokens.access_token, person.id)
      t.same(info, { sub: person.id, email: person.email, email_verified: true, name: 'Ada Lovelace' })

      const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '')
      t.not(refreshed.refresh_token, tokens.refresh_token, 'rotated on use')
      t.match(refreshed.claims(), { sub: person.id })

      const introspected = await client.tokenIntrospection(config, refreshed.access_token)
      t.match(introspected, { active: true, sub: person.id, client_id: registered.id })
      await client.tokenRevocation(config, refreshed.access_token)
      t.match(await client.tokenIntrospection(config, refreshed.access_token), { active: false })
      await t.rejects(client.fetchUserInfo(config, refreshed.access_token, person.id), 'a revoked access token reads nothing')
    })

    t.test('a consent is remembered per account and client, listed, and revocable by the person', async (t) => {
      const person = await createAccount(app)
      const first = await signIn(person)
      // Another browser (no session there): signs in again, but is not asked to consent again.
      const request = await authorization()
      const browser = new CookieBrowser(issuer)
      const login = await browser.follow(request.url)
      const html = await login.response.text()
      const afterLogin = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(html), email: person.email, password: person.password } })
      t.match(afterLogin.url, new RegExp(`^${redirectUri}\\?code=`), 'no consent page the second time')

      const listed = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/grants' }))
      t.equal(listed.statusCode, 200)
      const grants = listed.json().data
      t.match(grants, [{ client_id: registered.id, client_name: 'Relying party', scopes: ['openid', 'email', 'profile'] }])

      const revoked = await app.inject(withToken(person.token, { method: 'DELETE', url: `/api/v1/auth/grants/${grants[0].id as string}` }))
      t.equal(revoked.statusCode, 204)
      t.match(await refusal(client.refreshTokenGrant(config, first.refresh_token ?? '')), { error: 'invalid_grant' }, 'the revoked consent\'s refresh token is dead')
      t.match(await client.tokenIntrospection(config, first.access_token), { active: false })
      const again = await app.inject(withToken(person.token, { method: 'DELETE', url: `/api/v1/auth/grants/${grants[0].id as string}` }))
      t.equal(again.statusCode, 404)
      const stranger = await createAccount(app)
      const foreign = await app.inject(withToken(stranger.token, { method: 'DELETE', url: `/api/v1/auth/grants/${grants[0].id as string}` }))
      t.equal(foreign.statusCode, 404, 'another person\'s consent is not found')
      const audit = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/audit-logs?event=authorization_grant.revoked&actor_id=${person.id}` }))
      t.equal(audit.json().data.length, 1)
    })

    t.test('client credentials: the scopes an administrator gave, nothing else', async (t) => {
      const tokens = await client.clientCredentialsGrant(config, { scope: 'api:read' })
      t.equal(tokens.scope, 'api:read')
      t.match(await client.tokenIntrospection(config, tokens.access_token), { active: true, client_id: registered.id, scope: 'api:read' })
      t.equal(tokens.expires_in, 900)
      t.match(await refusal(client.clientCredentialsGrant(config, { scope: 'api:write' })), { error: 'invalid_scope' }, 'a scope the client was not given')
      t.match(await refusal(client.clientCredentialsGrant(otherConfig)), { error: 'invalid_request', error_description: 'requested grant type is not allowed for this client' }, 'a client without the grant')
    })

    t.test('a new password, a suspension, a deletion end the account\'s sessions, consents and tokens at the authorization server', async (t) => {
      const person = await createAccount(app)
      const tokens = await signIn(person)
      const changed = await app.inject(withToken(person.token, { method: 'PATCH', url: `/api/v1/users/${person.id}`, payload: { password: 'another-long-password-1', current_password: person.password } }))
      t.equal(changed.statusCode, 200, changed.body)
      t.match(await refusal(client.refreshTokenGrant(config, tokens.refresh_token ?? '')), { error: 'invalid_grant' })
      t.match(await client.tokenIntrospection(config, tokens.access_token), { active: false })

      const suspended = await createAccount(app)
      const its = await signIn(suspended)
      const suspension = await app.inject(withToken(server.admin.token, { method: 'POST', url: `/api/v1/users/${suspended.id}/suspension`, payload: { reason: 'test' } }))
      t.equal(suspension.statusCode, 200)
      t.match(await refusal(client.refreshTokenGrant(config, its.refresh_token ?? '')), { error: 'invalid_grant' })
      const request = await authorization()
      const browser = new CookieBrowser(issuer)
      const login = await browser.follow(request.url)
      const refused = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: suspended.email, password: suspended.password } })
      t.equal(refused.response.status, 400, 'the sign-in page refuses a suspended account')
      t.match(await refused.response.text(), /suspended/i)

      const leaving = await createAccount(app)
      const theirs = await signIn(leaving)
      const deleted = await app.inject(withToken(leaving.token, { method: 'DELETE', url: '/api/v1/users/me' }))
      t.equal(deleted.statusCode, 204)
      t.match(await refusal(client.refreshTokenGrant(config, theirs.refresh_token ?? '')), { error: 'invalid_grant' }, 'a deleted account\'s tokens end')
      t.match(await client.tokenIntrospection(config, theirs.access_token), { active: false })
      const left = await app.database.db.selectFrom('authorization_artifacts').select('id').where('account_id', '=', leaving.id).execute()
      t.same(left, [], 'nothing of the erased account is kept')
    })

    t.test('attacks', async (t) => {
      const person = await createAccount(app)

      t.test('a redirect URI that is not exactly a registered one is refused on the service\'s page, never redirected to', async (t) => {
        for (const redirect of [`${redirectUri}/extra`, `${rp}/CALLBACK`, `${redirectUri}x`, `${rp}/`, redirectUri.replace('127.0.0.1', 'localhost'), `${redirectUri}?next=1`]) {
          const request = await authorization({ redirect })
          const answer = await fetch(request.url, { redirect: 'manual' })
          t.equal(answer.status, 400, redirect)
          t.equal(answer.headers.get('location'), null)
        }
      })

      t.test('PKCE: required, S256 only, and the verifier must match', async (t) => {
        const noChallenge = new URL((await authorization()).url)
        noChallenge.searchParams.delete('code_challenge')
        noChallenge.searchParams.delete('code_challenge_method')
        const missing = await fetch(noChallenge, { redirect: 'manual' })
        t.match(missing.headers.get('location'), /error=invalid_request/)
        const plain = new URL((await authorization()).url)
        plain.searchParams.set('code_challenge_method', 'plain')
        t.match((await fetch(plain, { redirect: 'manual' })).headers.get('location'), /error=invalid_request/)

        const request = await authorization()
        const back = await authorizeWithPassword(new CookieBrowser(issuer), request.url, person)
        const forged = { ...request, verifier: client.randomPKCECodeVerifier() }
        const anotherVerifier = exchange(config, new URL(back), forged)
        t.match(await refusal(anotherVerifier), { error: 'invalid_grant' }, 'another verifier')
        const code = new URL(back).searchParams.get('code') ?? ''
        const withoutVerifier = await fetch(`${issuer}/oidc/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${registered.id}:${registered.secret}`).toString('base64')}` },
          body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri }).toString()
        })
        t.equal(withoutVerifier.status, 400)
        t.match(await withoutVerifier.json(), { error: 'invalid_grant' })
      })

      t.test('a code is good once: replayed, it is refused and the tokens it gave are revoked', async (t) => {
        const request = await authorization()
        const back = new URL(await authorizeWithPassword(new CookieBrowser(issuer), request.url, person))
        const tokens = await exchange(config, back, request)
        t.match(await refusal(exchange(config, back, request)), { error: 'invalid_grant' })
        t.match(await client.tokenIntrospection(config, tokens.access_token), { active: false })
      })

      t.test('a code, or a refresh token, of another client is refused', async (t) => {
        const request = await authorization()
        const back = new URL(await authorizeWithPassword(new CookieBrowser(issuer), request.url, person))
        const stolen = new URL(`${rp}/other?${back.searchParams.toString()}`)
        t.match(await refusal(exchange(otherConfig, stolen, request)), { error: 'invalid_grant' })
        const tokens = await exchange(config, back, request)
        t.match(await refusal(client.refreshTokenGrant(otherConfig, tokens.refresh_token ?? '')), { error: 'invalid_grant' })
        t.type((await client.refreshTokenGrant(config, tokens.refresh_token ?? '')).access_token, 'string', 'still good for its own client')
      })

      t.test('a refresh token presented again after its rotation ends the whole grant', async (t) => {
        const tokens = await signIn(person)
        const rotated = await client.refreshTokenGrant(config, tokens.refresh_token ?? '')
        t.match(await refusal(client.refreshTokenGrant(config, tokens.refresh_token ?? '')), { error: 'invalid_grant' })
        t.match(await refusal(client.refreshTokenGrant(config, rotated.refresh_token ?? '')), { error: 'invalid_grant' }, 'the thief\'s or the owner\'s: both dead')
      })

      t.test('consent forgery: a form post without the page\'s token, with another interaction\'s, or from another browser changes nothing', async (t) => {
        const victim = await createAccount(app)
        const browser = new CookieBrowser(issuer)
        const request = await authorization({ extra: { prompt: 'consent' } })
        const login = await browser.follow(request.url)
        const consent = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: victim.email, password: victim.password } })
        t.match(consent.url, /\/oidc\/interaction\//)
        const html = await consent.response.text()
        t.match(html, /asks to/)
        const otherLogin = await new CookieBrowser(issuer).follow((await authorization()).url)
        const otherToken = formToken(await otherLogin.response.text())

        for (const [label, form, from] of [
          ['no token', {}, browser], ['another interaction\'s token', { csrf: otherToken }, browser],
          ['another browser', { csrf: formToken(html) }, new CookieBrowser(issuer)]
        ] as const) {
          const forged = await from.request(`${consent.url}/consent`, { form })
          t.equal(forged.status, 400, label)
          t.equal(forged.headers.get('location'), null, label)
        }
        const listed = await app.inject(withToken(victim.token, { method: 'GET', url: '/api/v1/auth/grants' }))
        t.same(listed.json().data, [], 'no consent was recorded')
        const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(html) } })
        t.match(allowed.url, new RegExp(`^${redirectUri}\\?code=`), 'the real page\'s form still works')
      })

      t.test('the pages cannot be framed, run no inline script and send no cache; only the sign-in page loads one, the service\'s own', async (t) => {
        const browser = new CookieBrowser(issuer)
        const signInPage = await browser.follow((await authorization({ extra: { prompt: 'consent' } })).url)
        t.equal(signInPage.response.status, 200)
        const html = await signInPage.response.text()
        const consentPage = await browser.follow(`${signInPage.url}/login`, { form: { csrf: formToken(html), email: person.email, password: person.password } })
        t.match(await consentPage.response.text(), /asks to/)
        for (const [label, { response }, scripts] of [['sign-in', signInPage, true], ['consent', consentPage, false]] as const) {
          const csp = response.headers.get('content-security-policy') ?? ''
          t.match(csp, /frame-ancestors 'none'/, label)
          t.match(csp, /default-src 'none'/, label)
          t.notMatch(csp, /unsafe-inline|unsafe-eval/, label)
          if (scripts) t.match(csp, /script-src 'self'(;|$)/, label)
          else t.notMatch(csp, /script-src/, label)
          t.equal(response.headers.get('x-frame-options'), 'DENY', label)
          t.equal(response.headers.get('cache-control'), 'no-store', label)
        }
        t.same([...html.matchAll(/<script[^>]*>/g)].map(([tag]) => tag), [
          '<script src="/oidc/webauthn.js" defer>', '<script src="/oidc/pages.js" defer>'
        ], 'scripts by address only, from the service')
        t.notMatch(html, /\sstyle=|\son[a-z]+=/, 'no inline style or handler')
      })

      t.test('RP-initiated logout redirects only to a registered post-logout address', async (t) => {
        const tokens = await signIn(person)
        const open = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: 'https://attacker.example/' })
        const refused = await fetch(open, { redirect: 'manual' })
        t.equal(refused.status, 400)
        t.equal(refused.headers.get('location'), null)
        const registeredOne = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out` })
        const asked = await fetch(registeredOne, { redirect: 'manual' })
        t.equal(asked.status, 200, 'the sign-out confirmation page')
      })

      t.test('a disabled client is refused at the token endpoint and the authorization endpoint; its tokens are gone', async (t) => {
        const doomed = await server.register({ name: 'Doomed', redirect_uris: [redirectUri], grant_types: ['client_credentials'], scopes: ['api:read'] })
        const doomedConfig = await client.discovery(new URL(issuer), doomed.id, doomed.secret, undefined, insecure)
        const before = await client.clientCredentialsGrant(doomedConfig, { scope: 'api:read' })
        const disabled = await app.inject(withToken(server.admin.token, { method: 'PATCH', url: `/api/v1/oauth-clients/${doomed.id}`, payload: { disabled: true } }))
        t.equal(disabled.statusCode, 200)
        t.match(await refusal(client.clientCredentialsGrant(doomedConfig, { scope: 'api:read' })), { error: 'invalid_client' })
        t.match(await client.tokenIntrospection(config, before.access_token), { active: false })
        const url = new URL((await authorization()).url)
        url.searchParams.set('client_id', doomed.id)
        t.equal((await fetch(url, { redirect: 'manual' })).status, 400)
      })

      t.test('a wrong client secret, or a rotated one, is refused', async (t) => {
        const wrong = await client.discovery(new URL(issuer), registered.id, `${registered.secret}x`, undefined, insecure)
        t.match(await refusal(client.clientCredentialsGrant(wrong, { scope: 'api:read' })), { error: 'invalid_client' })
        const rotating = await server.register({ name: 'Rotating', redirect_uris: [], grant_types: ['client_credentials'], scopes: ['api:read'] })
        const rotated = await app.inject(withToken(server.admin.token, { method: 'POST', url: `/api/v1/oauth-clients/${rotating.id}/secret` }))
        t.equal(rotated.statusCode, 200)
        const old = await client.discovery(new URL(issuer), rotating.id, rotating.secret, undefined, insecure)
        t.match(await refusal(client.clientCredentialsGrant(old, { scope: 'api:read' })), { error: 'invalid_client' })
        const newSecret = rotated.json().data.client_secret as string
        const fresh = await client.discovery(new URL(issuer), rotating.id, newSecret, undefined, insecure)
        t.type((await client.clientCredentialsGrant(fresh, { scope: 'api:read' })).access_token, 'string')
      })

      t.test('a wrong password on the sign-in page counts toward the lockout and says only that it is wrong', async (t) => {
        const browser = new CookieBrowser(issuer)
        const login = await browser.follow((await authorization()).url)
        const wrong = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: person.email, password: 'not-the-password' } })
        t.equal(wrong.response.status, 400)
        const html = await wrong.response.text()
        t.match(html, /Invalid email or password/i)
        t.match(html, new RegExp(`value="${person.email}"`), 'the address is kept in the form')
        const audit = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/audit-logs?event=auth.login_failed&actor_id=${person.id}` }))
        t.equal(audit.json().data.length, 1)
      })
    })
  })
}

t.test('dynamic client registration (RFC 7591), with the operator\'s initial access token', async (t) => {
  const initialAccessToken = 'registration-token-that-is-long-enough-1234'
  const env = { AUTHORIZATION_SERVER_REGISTRATION_TOKEN: initialAccessToken }
  const server = await startAuthorizationServer(t, null, env)
  const { app, issuer } = server
  const rp = await callbackServer(t)
  const register = async (metadata: Record<string, unknown>, token = initialAccessToken) => await fetch(`${issuer}/oidc/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(metadata)
  })
  const document = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()
  t.equal(document.registration_endpoint, `${issuer}/oidc/reg`)

  t.test('without the token, or with another, nothing is registered', async (t) => {
    const missing = await fetch(`${issuer}/oidc/reg`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    t.equal(missing.status, 401)
    t.match(await missing.json(), { error: 'invalid_token' })
    t.equal((await register({ redirect_uris: [`${rp}/cb`] }, `${initialAccessToken}x`)).status, 401)
  })

  t.test('a public client registers itself and signs a person in with PKCE', async (t) => {
    const answer = await register({ client_name: 'MCP client', redirect_uris: [`${rp}/cb`], token_endpoint_auth_method: 'none', scope: 'openid email' })
    t.equal(answer.status, 201)
    const registered = await answer.json()
    t.match(registered, { client_name: 'MCP client', token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], scope: 'openid email' })
    t.notOk('client_secret' in registered)
    const config = await client.discovery(new URL(issuer), registered.client_id, undefined, client.None(), insecure)
    const person = await createAccount(app)
    const { url, verifier, state } = await pkceAuthorization(config, `${rp}/cb`, 'openid email')
    const back = await authorizeWithPassword(new CookieBrowser(issuer), url.href, person)
    const tokens = await exchange(config, new URL(back), { verifier, state })
    t.match(tokens.claims(), { sub: person.id, aud: registered.client_id })
    const audit = await app.inject(withToken(server.admin.token, { method: 'GET', url: '/api/v1/audit-logs?event=oauth_client.created' }))
    t.match(audit.json().data, [{ actor_id: null, details: { client_id: registered.client_id, through: 'dynamic_registration' } }])
  })

  t.test('a confidential client gets its secret once; the admin API\'s rules hold', async (t) => {
    const answer = await register({ redirect_uris: [`${rp}/cb`] })
    t.equal(answer.status, 201)
    const registered = await answer.json()
    t.match(registered, { client_secret: String, client_secret_expires_at: 0, token_endpoint_auth_method: 'client_secret_basic', client_name: 'Unnamed application' })
    const listed = await app.inject(withToken(server.admin.token, { method: 'GET', url: `/api/v1/oauth-clients/${registered.client_id as string}` }))
    t.equal(listed.statusCode, 200)
    t.notMatch(listed.body, registered.client_secret)

    for (const [label, metadata, error] of [
      ['javascript: redirect', { redirect_uris: ['javascript:alert(1)//'] }, 'invalid_redirect_uri'],
      ['plain http to another host', { redirect_uris: ['http://attacker.example/cb'] }, 'invalid_redirect_uri'],
      ['no redirect URI for the code grant', { redirect_uris: [] }, 'invalid_redirect_uri'],
      ['a scope for machine clients', { grant_types: ['client_credentials'], scope: 'api:read' }, 'invalid_client_metadata'],
      ['an unknown grant', { redirect_uris: [`${rp}/cb`], grant_types: ['implicit'] }, 'invalid_client_metadata'],
      ['a public client with client credentials', { token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] }, 'invalid_client_metadata']
    ] as const) {
      const refused = await register(metadata)
      t.equal(refused.status, 400, label)
      t.match(await refused.json(), { error, error_description: String }, label)
    }
  })
})

t.test('without an initial access token, registration is not offered', async (t) => {
  const server = await startAuthorizationServer(t, null)
  const document = await (await fetch(`${server.issuer}/.well-known/openid-configuration`)).json()
  t.notOk('registration_endpoint' in document)
  const answer = await fetch(`${server.issuer}/oidc/reg`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  t.equal(answer.status, 404)
})

t.test('a second factor by e-mail on the pages: the code is sent on request, entered, and the flow goes on', async (t) => {
  const smtp = await new MailServer().start()
  t.teardown(async () => await smtp.stop())
  const server = await startAuthorizationServer(t, null, { SMTP_URL: smtp.url() })
  const { app, issuer } = server
  const { redirectUri, config } = await relyingParty(t, server, { name: 'Mail app', grant_types: ['authorization_code'], scopes: ['openid'] })
  const person = await createAccount(app)
  t.equal((await app.inject(withToken(person.token, { method: 'POST', url: '/api/v1/auth/mfa/email/enable' }))).statusCode, 204)

  const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid')
  const browser = new CookieBrowser(issuer)
  const login = await browser.follow(url.href)
  const mfa = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: person.email, password: person.password } })
  const page = await mfa.response.text()
  t.match(page, /a code sent by e-mail/)
  t.match(page, /Send a code by e-mail/)
  const carried = Object.fromEntries(['csrf', 'mfa_token', 'methods'].map((name) => [name, new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1] ?? '']))
  t.match(carried, { methods: 'email' })

  const sent = await browser.follow(`${login.url}/mfa/code`, { form: { ...carried, method: 'email' } })
  t.equal(sent.response.status, 200)
  t.match(await sent.response.text(), /A code was sent by e-mail/)
  const code = /\b(\d{6})\b/.exec((await smtp.next((mail) => mail.to.includes(person.email) && /code/i.test(mail.subject))).text)?.[1] ?? ''
  const consent = await browser.follow(`${login.url}/mfa`, { form: { ...carried, code } })
  const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
  const tokens = await exchange(config, new URL(allowed.url), { verifier, state })
  t.match(tokens.claims(), { sub: person.id, acr: '2', amr: ['pwd', 'otp', 'mfa'] })
})

t.test('a provider\'s sign-in started on the sign-in page: back on the pages, then to the application', async (t) => {
  const providers: OpenIdTestProvider[] = []
  const server = await startAuthorizationServer(t, null, async (issuer) => {
    const callback = `${issuer}/api/v1/auth/oauth/corp/callback`
    const corp = await new OpenIdTestProvider({ id: 'pages-corp', secret: 'pages-corp-secret', redirectUri: callback }).start()
    t.teardown(async () => await corp.stop())
    providers.push(corp)
    return { OAUTH_PROVIDERS: 'corp', OAUTH_CORP_ISSUER: corp.issuer, OAUTH_CORP_CLIENT_ID: 'pages-corp', OAUTH_CORP_CLIENT_SECRET: 'pages-corp-secret', OAUTH_CORP_REDIRECT_URI: callback }
  })
  const [corp] = providers
  if (corp === undefined) throw new Error('no provider')
  const { issuer } = server
  const { redirectUri, config } = await relyingParty(t, server, { name: 'Wiki', grant_types: ['authorization_code'], scopes: ['openid', 'email'] })
  const email = uniqueEmail('federated')
  corp.accounts.set('grace', { email, email_verified: true, name: 'Grace Hopper' })

  const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid email')
  const browser = new CookieBrowser(issuer)
  const login = await browser.follow(url.href)
  const html = await login.response.text()
  const link = /<a href="([^"]+)">Continue with Corp<\/a>/.exec(html)?.[1]?.replaceAll('&amp;', '&')
  t.type(link, 'string', 'the sign-in page offers the provider')
  const toProvider = await browser.follow(link ?? '')
  t.ok(toProvider.url.startsWith(corp.issuer), 'the browser goes to the provider')
  const callback = await corp.signIn(toProvider.url, 'grace')
  const consent = await browser.follow(callback.href)
  t.match(consent.url, /\/oidc\/interaction\//, 'back on the pages')
  const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
  const tokens = await exchange(config, new URL(allowed.url), { verifier, state })
  t.match(tokens.claims(), { amr: ['fed'], acr: '1' })
  t.match(await client.fetchUserInfo(config, tokens.access_token, String(tokens.claims()?.sub)), { email })

  t.test('a code from the provider\'s sign-in is bound to the interaction that started it', async (t) => {
    const other = new CookieBrowser(issuer)
    const otherLogin = await other.follow((client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state
    })).href)
    t.equal(otherLogin.response.status, 200)
    // Another browser's sign-in at the provider, its one-time code replayed into this interaction.
    const theirs = new CookieBrowser(issuer)
    const theirLogin = await theirs.follow(url.href)
    const theirLink = /<a href="([^"]+)">Continue with Corp<\/a>/.exec(await theirLogin.response.text())?.[1]?.replaceAll('&amp;', '&') ?? ''
    const theirCallback = await corp.signIn((await theirs.follow(theirLink)).url, 'grace')
    const back = await theirs.request(theirCallback.href)
    const federated = new URL(back.headers.get('location') ?? '', issuer)
    t.match(federated.pathname, /^\/oidc\/interaction\/[^/]+\/federated$/, 'back below the interaction\'s own address, where its cookie is sent')
    const replayed = await other.follow(federated.href)
    t.equal(replayed.response.status, 400, 'refused as it is: it names their interaction, not this browser\'s')
    t.match(await replayed.response.text(), /Sign-in expired/)
    const intoOwn = new URL(`${otherLogin.url}/federated${federated.search}`)
    const rewritten = await other.follow(intoOwn.href)
    t.equal(rewritten.response.status, 400, 'refused when put under this browser\'s interaction: the verifier is the other\'s')
    t.match(await rewritten.response.text(), /Sign in/)
  })
})

t.test('single sign-on started on the sign-in page: to the IdP of the address\'s organization, back on the pages, then to the application', async (t) => {
  const smtp = await mailServer(t)
  const server = await startAuthorizationServer(t, null, async (issuer) => ({
    PUBLIC_URL: issuer, SMTP_URL: smtp.url(), APP_URL
  }))
  const { app, issuer } = server
  const h = new SsoHarness(app, smtp)
  const { owner, organization, domain, idp, connection, spMetadata } = await h.connected({ Staff: 'admin' })
  const { redirectUri, config } = await relyingParty(t, server, { name: 'Intranet', grant_types: ['authorization_code'], scopes: ['openid', 'email'] })
  const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid email')
  const browser = new CookieBrowser(issuer)
  const login = await browser.follow(url.href)
  const html = await login.response.text()
  t.match(html, /formaction="[^"]+\/sso" formnovalidate>Continue with single sign-on</, 'the sign-in page offers single sign-on')
  const csrf = formToken(html)

  for (const [given, message] of [
    [`someone@${uniqueDomain('nosso')}`, /No single sign-on is set up for this address/],
    ['', /Enter your work e-mail address/]
  ] as const) {
    const page = await browser.follow(`${login.url}/sso`, { form: { csrf, email: given } })
    t.equal(page.response.status, 400, `${JSON.stringify(given)}: the sign-in page again`)
    t.match(await page.response.text(), message)
  }
  t.match((await browser.follow(`${login.url}/sso`, { form: { csrf: 'forged', email: `alice@${domain}` } })).url, /\/oidc\/interaction\//,
    'a forged form goes nowhere')

  const email = `alice@${domain}`
  const toIdp = await browser.follow(`${login.url}/sso`, { form: { csrf, email } })
  t.ok(toIdp.url.startsWith(`${idp.ssoUrl}?SAMLRequest=`), `to the organization's IdP: ${toIdp.url}`)
  const request = authnRequestOf(toIdp.url)
  const response = await idp.respond(spMetadata, { nameId: email, inResponseTo: request.id, attributes: { groups: ['Staff'] } })
  const consent = await browser.follow(connection.acs_url, {
    form: { SAMLResponse: response, RelayState: request.relayState }
  })
  t.match(consent.url, /\/oidc\/interaction\/[^/]+$/, 'back on the pages')
  const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
  const tokens = await exchange(config, new URL(allowed.url), { verifier, state })
  t.match(tokens.claims(), { amr: ['fed'], acr: '1' })
  const userInfo = await client.fetchUserInfo(config, tokens.access_token, String(tokens.claims()?.sub))
  t.match(userInfo, { email, email_verified: true })
  const members = (await h.call(owner, 'GET', `/organizations/${organization.id}/members?search=${encodeURIComponent(email)}`)).json().data
  t.match(members, [{ email, role: 'admin' }], 'a member with the role her group maps to, as through the API')

  t.test('an address whose domain requires single sign-on is sent to it from the password form\'s refusal', async (t) => {
    const domains = (await h.call(owner, 'GET', `/organizations/${organization.id}/domains`)).json().data
    t.equal((await h.call(owner, 'PATCH', `/organizations/${organization.id}/domains/${domains[0].id}`, { sso_required: true })).statusCode, 200)
    const stranger = new CookieBrowser(issuer)
    const page = await stranger.follow((await pkceAuthorization(config, redirectUri, 'openid')).url.href)
    const refused = await stranger.follow(`${page.url}/login`, {
      form: { csrf: formToken(await page.response.text()), email: `bob@${domain}`, password: TEST_PASSWORD }
    })
    t.equal(refused.response.status, 400)
    t.match(await refused.response.text(), /signs in through its organization&#39;s identity provider: continue with single sign-on\./)
  })
})

t.test('hostile requests to the authorization server get its errors or the pages\' refusals, never a 500', async (t) => {
  const server = await startAuthorizationServer(t, null)
  const { issuer } = server
  const form = 'application/x-www-form-urlencoded'
  const cases: Array<[string, string, RequestInit?]> = [
    ['token without a grant type', '/oidc/token', { method: 'POST', headers: { 'content-type': form }, body: 'x=1' }],
    ['token with a JSON body', '/oidc/token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"client_credentials"}' }],
    ['token with a broken Basic header', '/oidc/token', { method: 'POST', headers: { 'content-type': form, authorization: 'Basic %%%' }, body: 'grant_type=client_credentials' }],
    ['token with a huge code', '/oidc/token', { method: 'POST', headers: { 'content-type': form }, body: `grant_type=authorization_code&code=${'a'.repeat(40_000)}` }],
    ['authorization for an unknown client', '/oidc/auth?client_id=nobody&response_type=code&scope=openid'],
    ['authorization with repeated parameters', '/oidc/auth?client_id=a&client_id=b'],
    ['userinfo with a forged token', '/oidc/me', { headers: { authorization: 'Bearer not-a-token' } }],
    ['introspection unauthenticated', '/oidc/token/introspection', { method: 'POST', headers: { 'content-type': form }, body: 'token=x' }],
    ['a page for an unknown interaction', '/oidc/interaction/nothing-here'],
    ['a form for an unknown interaction', '/oidc/interaction/nothing-here/login', { method: 'POST', headers: { 'content-type': form }, body: 'csrf=x&email=a&password=b' }],
    ['a form posted as JSON', '/oidc/interaction/nothing-here/consent', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"csrf":["x"]}' }],
    ['the provider return without an interaction', '/oidc/interaction/nothing-here/federated?code=abc'],
    ['registration when it is off', '/oidc/reg', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }],
    ['a device code page with a wrong code', '/oidc/device?user_code=%00%00'],
    ['end session with a forged hint', '/oidc/session/end?id_token_hint=a.b.c'],
    ['an unknown path', '/oidc/../../etc/passwd'],
    ['an unknown method', '/oidc/token', { method: 'PATCH' }]
  ]
  for (const [label, path, init] of cases) {
    const answer = await fetch(`${issuer}${path}`, { redirect: 'manual', ...init })
    t.ok(answer.status < 500, `${label}: ${answer.status}`)
    t.notMatch(await answer.text(), /at .*\.js:\d+|node_modules|Error: /, `${label}: no internals`)
  }
})

const testRedisUrl = process.env.TEST_REDIS_URL
if (testRedisUrl !== undefined && testRedisUrl !== '') {
  t.test('with Redis, interactions live there, with their expiry, and never in the database; the flow is unchanged', async (t) => {
    const server = await startAuthorizationServer(t, null, { REDIS_URL: testRedisUrl })
    const { app, issuer } = server
    await redisReady(app)
    const redis = app.redis
    if (redis === null) throw new Error('no Redis')
    const { redirectUri, config } = await relyingParty(t, server, { name: 'Cached', grant_types: ['authorization_code'], scopes: ['openid'] })
    const person = await createAccount(app)
    const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid')
    const browser = new CookieBrowser(issuer)
    const login = await browser.follow(url.href)
    const uid = /\/oidc\/interaction\/([^/?]+)$/.exec(login.url)?.[1] ?? ''
    const ttl = await redis.pttl(`authorization:Interaction:${uid}`)
    t.ok(ttl > 0 && ttl <= 600_000, `the interaction is in Redis for its 10 minutes (${ttl} ms left)`)
    const inDatabase = await app.database.db.selectFrom('authorization_artifacts').select('id').where('model', '=', 'Interaction').execute()
    t.same(inDatabase, [], 'and not in the database')
    const consent = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(await login.response.text()), email: person.email, password: person.password } })
    const allowed = await browser.follow(`${consent.url}/consent`, { form: { csrf: formToken(await consent.response.text()) } })
    const tokens = await exchange(config, new URL(allowed.url), { verifier, state })
    t.match(tokens.claims(), { sub: person.id })
    t.equal(await redis.exists(`authorization:Interaction:${uid}`), 0, 'an interaction finished is gone')
    const sessions = await app.database.db.selectFrom('authorization_artifacts').select('id').where('model', '=', 'Session').where('account_id', '=', person.id).execute()
    t.equal(sessions.length, 1, 'the session, an account\'s state, is in the database')
  })
}

t.test('an unclaimed account\'s consents and tokens do not survive its claiming; an application\'s token is no bearer for the API', async (t) => {
  const smtp = await new MailServer().start()
  t.teardown(async () => await smtp.stop())
  const server = await startAuthorizationServer(t, null, { SMTP_URL: smtp.url() })
  const { app, issuer } = server
  const { redirectUri, config } = await relyingParty(t, server, { name: 'Early app', grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'email'] })
  // Registered, its address not proved yet: unclaimed (docs/security.md, "Account claiming").
  const email = uniqueEmail('unclaimed')
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Early', password: TEST_PASSWORD } })
  t.equal(created.statusCode, 201)
  const { url, verifier, state } = await pkceAuthorization(config, redirectUri, 'openid email')
  const back = await authorizeWithPassword(new CookieBrowser(issuer), url.href, { email, password: TEST_PASSWORD })
  const tokens = await exchange(config, new URL(back), { verifier, state })
  t.type(tokens.refresh_token, 'string')

  const asBearer = await app.inject(withToken(tokens.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
  t.equal(asBearer.statusCode, 401, 'the application\'s access token opens none of the API')

  const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(await smtp.next((mail) => mail.to.includes(email))) } })
  t.equal(verified.statusCode, 200, 'the address is claimed')
  t.match(await refusal(client.refreshTokenGrant(config, tokens.refresh_token ?? '')), { error: 'invalid_grant' }, 'the consent given before the claim is gone')
  t.match(await client.tokenIntrospection(config, tokens.access_token), { active: false })
  const held = await app.database.db.selectFrom('authorization_artifacts').select('model').where('account_id', '=', created.json().data.id).execute()
  t.same(held, [], 'nothing attached before the claim is kept')
})
