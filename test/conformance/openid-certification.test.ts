/**
 * The OpenID Foundation's certification test plans for OpenID providers, mirrored: one test per
 * module of the basic, config, dynamic-registration and RP-initiated-logout plans, named after
 * it, sending the module's request with a relying party library (openid-client) and checking
 * the answer the module expects (docs/testing.md, "Conformance"). The suite itself needs
 * containers, which these machines do not run.
 */
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose'
import { generateKeyPairSync } from 'node:crypto'
import * as client from 'openid-client'
import t from 'tap'
import type { Test } from 'tap'
import { createAccount, type Account } from '../helpers/accounts.js'
import {
  authorizeWithPassword, callbackServer, CookieBrowser, formToken, insecure, refusal, relyingParty,
  startAuthorizationServer,
  type RunningAuthorizationServer
} from '../helpers/authorization-server.js'
import { clockPast } from '../helpers/clock.js'
import { backends, freshDatabaseUrl } from '../helpers/database.js'

const REGISTRATION_TOKEN = 'conformance-initial-access-token-0123456789'
const PEOPLE = { grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'profile', 'email', 'offline_access'] }

/** A relying party: its openid-client configuration and redirect URI. */
interface Party { config: client.Configuration, redirectUri: string, rp: string }

/** An authorization request as a module sends it: a fresh PKCE pair, state and (unless `withNonce` is false) nonce. */
async function request (party: Party, extra: Record<string, string> = {}, withNonce = true) {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = withNonce ? client.randomNonce() : undefined
  const url = client.buildAuthorizationUrl(party.config, {
    redirect_uri: party.redirectUri,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    ...(nonce !== undefined && { nonce }),
    ...extra
  })
  return { url: url.href, verifier, state, nonce }
}

/** The relying party's token request for the code `back` carries, checking state and nonce. */
async function redeem (party: Party, back: string, sent: { verifier: string, state: string, nonce?: string }) {
  return await client.authorizationCodeGrant(party.config, new URL(back), {
    pkceCodeVerifier: sent.verifier,
    expectedState: sent.state,
    ...(sent.nonce !== undefined && { expectedNonce: sent.nonce })
  })
}

/** A person signing in through the pages in a new browser for `party`; the tokens and the browser. */
async function signIn (
  party: Party, person: Account, extra: Record<string, string> = {}, browser = new CookieBrowser(issuerOf(party))
) {
  const sent = await request(party, extra)
  const back = await authorizeWithPassword(browser, sent.url, person)
  return { tokens: await redeem(party, back, sent), browser, back }
}

function issuerOf (party: Party): string {
  return party.config.serverMetadata().issuer
}

/** Where the browser ended for `url`: an address out of the service it was sent to, or a page of the service. */
async function answerTo (browser: CookieBrowser, url: string): Promise<{ url: string, status: number, page: string }> {
  const { response, url: at } = await browser.follow(url)
  return { url: at, status: response.status, page: await response.text() }
}

/** Refuses the module if the browser was sent to `redirectUri` (an error page of the service is expected). */
function shownAnErrorPage (t: Test, answer: { url: string, status: number, page: string }, issuer: string): void {
  t.ok(answer.url.startsWith(`${issuer}/`), 'the browser stays on the service: no redirect')
  t.equal(answer.status, 400)
  t.match(answer.page, /Something went wrong/)
}

/** Posts the first form of `html` (its action and fields, and `extra`) in `browser`; answers where it ended. */
async function submit (browser: CookieBrowser, html: string, at: string, extra: Record<string, string> = {}) {
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1]?.replaceAll('&amp;', '&') ?? ''
  const form = /<form[\s\S]*?<\/form>/.exec(html)?.[0] ?? ''
  const fields = Object.fromEntries([...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)].map(([, name, value]) => [name, value]))
  return await browser.follow(new URL(action, at).href, { form: { ...fields, ...extra } as Record<string, string> })
}

/** Registers `metadata` at /oidc/reg: the answer's status and body. */
async function register (
  issuer: string, metadata: Record<string, unknown>
): Promise<{ status: number, body: Record<string, any> }> {
  const answer = await fetch(`${issuer}/oidc/reg`, {
    method: 'POST', headers: { authorization: `Bearer ${REGISTRATION_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(metadata)
  })
  return { status: answer.status, body: await answer.json() as Record<string, any> }
}

/** A relying party registered dynamically with `metadata` (a redirect URI on its callback server by default). */
async function dynamicParty (t: Test, issuer: string, metadata: Record<string, unknown> = {}, path = '/callback'): Promise<Party & { registered: Record<string, any> }> {
  const rp = await callbackServer(t)
  const redirectUri = `${rp}${path}`
  const { status, body } = await register(issuer, { client_name: 'Conformance', redirect_uris: [redirectUri], scope: 'openid profile email', ...metadata })
  if (status !== 201) throw new Error(`registration refused: ${JSON.stringify(body)}`)
  const method = String(body.token_endpoint_auth_method)
  const authentication = method === 'client_secret_post' ? client.ClientSecretPost(body.client_secret) : method === 'none' ? client.None() : client.ClientSecretBasic(body.client_secret)
  const expected = { id_token_signed_response_alg: body.id_token_signed_response_alg }
  const config = await client.discovery(new URL(issuer), body.client_id, expected, authentication, insecure)
  return { config, redirectUri, rp, registered: body }
}

async function userinfo (party: Party, accessToken: string, how: 'get' | 'post-header' | 'post-body') {
  const endpoint = String(party.config.serverMetadata().userinfo_endpoint)
  const answer = how === 'get'
    ? await fetch(endpoint, { headers: { authorization: `Bearer ${accessToken}` } })
    : how === 'post-header'
      ? await fetch(endpoint, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } })
      : await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `access_token=${accessToken}` })
  return { status: answer.status, body: await answer.json() as Record<string, unknown> }
}

for (const backend of backends()) {
  t.test(`OpenID certification plans, mirrored (${backend.name})`, async (t) => {
    const server: RunningAuthorizationServer = await startAuthorizationServer(t, backend.url, {
      AUTHORIZATION_SERVER_REGISTRATION_TOKEN: REGISTRATION_TOKEN
    })
    const { app, issuer } = server
    // The plans' static client, with client_secret_basic (their default variant).
    const registered = await relyingParty(t, server, { name: 'Conformance', ...PEOPLE })
    const party = {
      ...registered,
      config: await client.discovery(
        new URL(issuer), registered.registered.id, undefined, client.ClientSecretBasic(registered.registered.secret),
        insecure
      )
    }
    const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as Record<string, any>

    t.test('oidcc-config-certification-test-plan', async (t) => {
      t.test('oidcc-discovery-endpoint-verification', async (t) => {
        t.equal(discovery.issuer, issuer, 'the issuer is the address discovery was read at')
        for (const member of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint']) {
          t.match(discovery[member], new RegExp(`^${issuer}/`), `${member} on the issuer`)
        }
        t.ok(discovery.response_types_supported.includes('code'))
        t.same(discovery.subject_types_supported, ['public'])
        t.ok(discovery.id_token_signing_alg_values_supported.includes('RS256'), 'RS256, which every provider must offer')
        t.notOk(discovery.id_token_signing_alg_values_supported.includes('none'))
        t.ok(discovery.scopes_supported.includes('openid'))
        for (const claim of ['sub', 'iss', 'auth_time', 'acr', 'email', 'name']) t.ok(discovery.claims_supported.includes(claim), `claims_supported has ${claim}`)
        t.ok(discovery.token_endpoint_auth_methods_supported.includes('client_secret_basic'))
        t.equal(discovery.request_uri_parameter_supported, false)
        t.not(discovery.request_parameter_supported, true, 'request objects are not offered')
        const jwks = await (await fetch(discovery.jwks_uri)).json() as { keys: Array<{ kid?: string, use?: string }> }
        const kids = jwks.keys.map((key) => key.kid)
        t.ok(kids.every((kid) => typeof kid === 'string'), 'every key has a kid')
        t.equal(new Set(kids).size, kids.length, 'kids are unique')
      })
    })

    t.test('oidcc-basic-certification-test-plan', async (t) => {
      const person = await createAccount(app, { name: 'Basic Plan' })

      t.test('oidcc-server', async (t) => {
        const { tokens } = await signIn(party, person)
        const claims = tokens.claims()
        const aud = party.config.clientMetadata().client_id
        t.match(claims, { iss: issuer, sub: person.id, aud, iat: Number, exp: Number, auth_time: Number })
        const { payload, protectedHeader } = await jwtVerify(tokens.id_token ?? '', createRemoteJWKSet(new URL(discovery.jwks_uri)), { issuer })
        t.equal(protectedHeader.alg, 'RS256')
        t.equal(payload.sub, person.id)
        t.match((await userinfo(party, tokens.access_token, 'get')).body, { sub: person.id })
      })

      t.test('oidcc-response-type-missing', async (t) => {
        const sent = new URL((await request(party)).url)
        sent.searchParams.delete('response_type')
        const answer = await answerTo(new CookieBrowser(issuer), sent.href)
        const back = new URL(answer.url)
        t.ok(answer.url.startsWith(party.redirectUri), 'the error is sent back to the client')
        t.equal(back.searchParams.get('error'), 'invalid_request')
        t.notOk(back.searchParams.has('code'))
      })

      t.test('oidcc-idtoken-signature', async (t) => {
        const { tokens } = await signIn(party, person)
        const header = decodeProtectedHeader(tokens.id_token ?? '')
        t.ok(discovery.id_token_signing_alg_values_supported.includes(header.alg), 'signed with an advertised algorithm')
        await jwtVerify(tokens.id_token ?? '', createRemoteJWKSet(new URL(discovery.jwks_uri)), { algorithms: [String(header.alg)] })
        t.pass('verified with the key its kid names')
      })

      t.test('oidcc-codereuse', async (t) => {
        const sent = await request(party)
        const back = await authorizeWithPassword(new CookieBrowser(issuer), sent.url, person)
        const tokens = await redeem(party, back, sent)
        t.match(await refusal(redeem(party, back, sent)), { error: 'invalid_grant' }, 'a code is good once')
        t.equal((await userinfo(party, tokens.access_token, 'get')).status, 401, 'the tokens the code gave are revoked')
      })

      t.test('oidcc-codereuse-30seconds', async (t) => {
        // The module waits 30 s between the two redemptions; a code lives 60 s here, so the answer is the same at once.
        const sent = await request(party)
        const back = await authorizeWithPassword(new CookieBrowser(issuer), sent.url, person)
        const tokens = await redeem(party, back, sent)
        t.match(await refusal(redeem(party, back, sent)), { error: 'invalid_grant' })
        t.equal((await userinfo(party, tokens.access_token, 'get')).status, 401)
      })

      for (const [module, scope, expected, absent] of [
        ['oidcc-scope-profile', 'openid profile', { name: 'Basic Plan' }, ['email']],
        ['oidcc-scope-email', 'openid email', { email: person.email, email_verified: true }, ['name']],
        ['oidcc-scope-address', 'openid address', {}, ['address']],
        ['oidcc-scope-phone', 'openid phone', {}, ['phone_number']],
        ['oidcc-scope-all', 'openid profile email address phone', { name: 'Basic Plan', email: person.email }, []]
      ] as const) {
        t.test(module, async (t) => {
          // Scopes the server does not offer (address, phone) are ignored, as OpenID Connect Core 5.4 allows.
          const { tokens } = await signIn(party, person, { scope })
          const info = (await userinfo(party, tokens.access_token, 'get')).body
          t.match(info, { sub: person.id, ...expected })
          for (const claim of absent) t.notOk(claim in info, `no ${claim}`)
        })
      }

      t.test('oidcc-claims-essential', async (t) => {
        const { tokens } = await signIn(party, person, { scope: 'openid profile', claims: JSON.stringify({ userinfo: { name: { essential: true } } }) })
        t.match((await userinfo(party, tokens.access_token, 'get')).body, { name: 'Basic Plan' })
      })

      for (const [module, extra, withNonce] of [
        ['oidcc-claims-locales', { claims_locales: 'se' }, true],
        ['oidcc-ui-locales', { ui_locales: 'se' }, true],
        ['oidcc-display-page', { display: 'page' }, true],
        ['oidcc-display-popup', { display: 'popup' }, true],
        ['oidcc-ensure-request-with-unknown-parameter-succeeds', { extra: 'foobar' }, true],
        ['oidcc-ensure-request-without-nonce-succeeds-for-code-flow', {}, false],
        ['oidcc-ensure-request-with-valid-pkce-succeeds', {}, true],
        ['oidcc-ensure-other-scope-order-succeeds', { scope: 'email openid' }, true],
        ['oidcc-alternate-happy-flow', { scope: 'openid email profile' }, true]
      ] as const) {
        t.test(module, async (t) => {
          const sent = await request(party, extra, withNonce)
          const back = await authorizeWithPassword(new CookieBrowser(issuer), sent.url, person)
          const claims = (await redeem(party, back, sent)).claims()
          t.equal(claims?.sub, person.id)
          t.equal(claims?.nonce, sent.nonce, 'the nonce asked, or none')
        })
      }

      for (const how of ['get', 'post-header', 'post-body'] as const) {
        t.test(`oidcc-userinfo-${how}`, async (t) => {
          const { tokens } = await signIn(party, person, { scope: 'openid email' })
          const answer = await userinfo(party, tokens.access_token, how)
          t.equal(answer.status, 200)
          t.match(answer.body, { sub: person.id, email: person.email })
        })
      }

      t.test('oidcc-login-hint', async (t) => {
        const sent = await request(party, { login_hint: person.email })
        const { response } = await new CookieBrowser(issuer).follow(sent.url)
        t.match(await response.text(), `value="${person.email}"`, 'the sign-in page takes the hint')
      })

      t.test('oidcc-prompt-login, oidcc-prompt-none-logged-in, oidcc-id-token-hint, oidcc-max-age-10000, oidcc-max-age-1', async (t) => {
        const { tokens, browser } = await signIn(party, person)
        const first = Number(tokens.claims()?.auth_time)
        /** When the browser last signed in (prompt-login signs it in again). */
        let signedInAt = first

        t.test('oidcc-prompt-none-logged-in', async (t) => {
          const sent = await request(party, { prompt: 'none' })
          const answer = await answerTo(browser, sent.url)
          t.match(answer.url, new RegExp(`^${party.redirectUri}\\?code=`), 'a code, with no page')
          t.equal((await redeem(party, answer.url, sent)).claims()?.sub, person.id)
        })

        t.test('oidcc-id-token-hint', async (t) => {
          const sent = await request(party, { prompt: 'none', id_token_hint: tokens.id_token ?? '' })
          const answer = await answerTo(browser, sent.url)
          t.equal((await redeem(party, answer.url, sent)).claims()?.sub, person.id, 'the same person, with no page')
        })

        t.test('oidcc-max-age-10000', async (t) => {
          const sent = await request(party, { max_age: '10000' })
          const answer = await answerTo(browser, sent.url)
          const claims = (await redeem(party, answer.url, sent)).claims()
          t.equal(claims?.auth_time, first, 'no new sign-in; auth_time is the first one\'s')
        })

        t.test('oidcc-prompt-login', async (t) => {
          const sent = await request(party, { prompt: 'login' })
          const { url, response } = await browser.follow(sent.url)
          t.match(await response.text(), /name="password"/, 'the sign-in page again, although signed in')
          const back = await authorizeWithPassword(browser, url, person)
          signedInAt = Number((await redeem(party, back, sent)).claims()?.auth_time)
          t.ok(signedInAt >= first)
        })

        t.test('oidcc-max-age-1', async (t) => {
          await clockPast((signedInAt + 2) * 1000)
          const sent = await request(party, { max_age: '1' })
          const { url, response } = await browser.follow(sent.url)
          t.match(await response.text(), /name="password"/, 'signed in longer than max_age ago: the sign-in page')
          const back = await authorizeWithPassword(browser, url, person)
          t.ok(Number((await redeem(party, back, sent)).claims()?.auth_time) > signedInAt, 'a new auth_time')
        })
      })

      t.test('oidcc-prompt-none-not-logged-in', async (t) => {
        const answer = await answerTo(new CookieBrowser(issuer), (await request(party, { prompt: 'none' })).url)
        t.equal(new URL(answer.url).searchParams.get('error'), 'login_required')
      })

      t.test('oidcc-ensure-post-request-succeeds', async (t) => {
        const sent = await request(party)
        const url = new URL(sent.url)
        const browser = new CookieBrowser(issuer)
        const posted = await browser.follow(`${issuer}${url.pathname}`, { form: Object.fromEntries(url.searchParams) })
        const back = await authorizeWithPassword(browser, posted.url, person)
        t.equal((await redeem(party, back, sent)).claims()?.sub, person.id)
      })

      t.test('oidcc-ensure-registered-redirect-uri', async (t) => {
        const sent = await request({ ...party, redirectUri: `${party.rp}/not-registered` })
        shownAnErrorPage(t, await answerTo(new CookieBrowser(issuer), sent.url), issuer)
      })

      t.test('oidcc-ensure-request-with-acr-values-succeeds', async (t) => {
        const { tokens } = await signIn(party, person, { acr_values: '1 2' })
        t.ok(['1', '2'].includes(String(tokens.claims()?.acr)), 'an acr of those asked')
      })

      t.test('oidcc-refresh-token', async (t) => {
        const { tokens } = await signIn(party, person, { scope: 'openid email' })
        const refreshed = await client.refreshTokenGrant(party.config, tokens.refresh_token ?? '')
        t.equal(refreshed.claims()?.sub, person.id, 'a new ID token for the same person')
        t.not(refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotated')
        t.match(await refusal(client.refreshTokenGrant(party.config, tokens.refresh_token ?? '')), { error: 'invalid_grant' }, 'the spent one is refused')
      })

      t.test('oidcc-server-client-secret-post', async (t) => {
        t.ok(discovery.token_endpoint_auth_methods_supported.includes('client_secret_post'))
        const post = client.ClientSecretPost(party.registered.secret)
        const config = await client.discovery(new URL(issuer), party.registered.id, undefined, post, insecure)
        const { tokens } = await signIn({ ...party, config }, person)
        t.equal(tokens.claims()?.sub, person.id, 'the secret in the body, as in the header')
        const dynamic = await dynamicParty(t, issuer, { token_endpoint_auth_method: 'client_secret_post' })
        t.equal(dynamic.registered.token_endpoint_auth_method, 'client_secret_post', 'registered as asked')
        t.equal((await signIn(dynamic, person)).tokens.claims()?.sub, person.id)
      })

      t.test('oidcc-idtoken-unsigned', async (t) => {
        t.notOk(discovery.id_token_signing_alg_values_supported.includes('none'), 'unsigned ID tokens are not offered')
        const refused = await register(issuer, { redirect_uris: [party.redirectUri], id_token_signed_response_alg: 'none' })
        t.equal(refused.status, 400)
      })

      for (const [module, parameter, error] of [
        ['oidcc-ensure-request-object-with-redirect-uri', 'request', 'request_not_supported'],
        ['oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported', 'request', 'request_not_supported'],
        ['oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported', 'request_uri', 'request_uri_not_supported']
      ] as const) {
        t.test(module, async (t) => {
          const claims = { client_id: party.config.clientMetadata().client_id, redirect_uri: party.redirectUri, scope: 'openid', response_type: 'code' }
          const object = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`
          const sent = await request(party, { [parameter]: parameter === 'request' ? object : 'https://rp.example.com/request.jwt' })
          const answer = await answerTo(new CookieBrowser(issuer), sent.url)
          t.equal(new URL(answer.url).searchParams.get('error'), error, 'rejected as unsupported, as discovery says')
        })
      }
    })

    t.test('oidcc-dynamic-certification-test-plan', async (t) => {
      const person = await createAccount(app, { name: 'Dynamic Plan' })

      t.test('oidcc-discovery-endpoint-verification', async (t) => {
        t.equal(discovery.registration_endpoint, `${issuer}/oidc/reg`)
      })

      t.test('oidcc-server', async (t) => {
        const dynamic = await dynamicParty(t, issuer)
        const { tokens } = await signIn(dynamic, person)
        t.equal(tokens.claims()?.sub, person.id)
      })

      t.test('oidcc-idtoken-rs256', async (t) => {
        const dynamic = await dynamicParty(t, issuer, { id_token_signed_response_alg: 'RS256' })
        const { tokens } = await signIn(dynamic, person)
        t.equal(decodeProtectedHeader(tokens.id_token ?? '').alg, 'RS256')
      })

      t.test('oidcc-idtoken-unsigned', async (t) => {
        t.equal((await register(issuer, { redirect_uris: [party.redirectUri], id_token_signed_response_alg: 'none' })).body.error, 'invalid_client_metadata')
      })

      t.test('oidcc-ensure-redirect-uri-in-authorization-request', async (t) => {
        const dynamic = await dynamicParty(t, issuer)
        const url = new URL((await request(dynamic)).url)
        url.searchParams.delete('redirect_uri')
        const answer = await answerTo(new CookieBrowser(issuer), url.href)
        t.ok(answer.url.startsWith(`${issuer}/`), 'no redirect without a redirect_uri')
        t.equal(answer.status, 400)
      })

      t.test('oidcc-redirect-uri-query-OK', async (t) => {
        const dynamic = await dynamicParty(t, issuer, {}, '/callback?foo=bar')
        const sent = await request(dynamic)
        const back = new URL(await authorizeWithPassword(new CookieBrowser(issuer), sent.url, person))
        t.equal(back.searchParams.get('foo'), 'bar', 'the registered query is kept')
        // By hand: openid-client names the redirect URI without its query at the token endpoint.
        const answer = await fetch(discovery.token_endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code: back.searchParams.get('code') ?? '',
            redirect_uri: dynamic.redirectUri,
            code_verifier: sent.verifier,
            client_id: dynamic.registered.client_id,
            client_secret: dynamic.registered.client_secret
          })
        })
        t.equal(answer.status, 200, 'the code is redeemed with the redirect URI as registered, query included')
        const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri))
        const { payload } = await jwtVerify(String((await answer.json()).id_token), jwks, { issuer })
        t.equal(payload.sub, person.id)
      })

      t.test('oidcc-redirect-uri-query-added', async (t) => {
        const dynamic = await dynamicParty(t, issuer)
        shownAnErrorPage(t, await answerTo(new CookieBrowser(issuer), (await request({ ...dynamic, redirectUri: `${dynamic.redirectUri}?foo=bar` })).url), issuer)
      })

      t.test('oidcc-redirect-uri-query-mismatch', async (t) => {
        const dynamic = await dynamicParty(t, issuer, {}, '/callback?foo=bar')
        shownAnErrorPage(t, await answerTo(new CookieBrowser(issuer), (await request({ ...dynamic, redirectUri: `${dynamic.rp}/callback?foo=zot` })).url), issuer)
      })

      t.test('oidcc-redirect-uri-regfrag', async (t) => {
        const refused = await register(issuer, { redirect_uris: [`${party.rp}/callback#fragment`] })
        t.equal(refused.status, 400)
        t.equal(refused.body.error, 'invalid_redirect_uri')
      })

      t.test('oidcc-refresh-token', async (t) => {
        const dynamic = await dynamicParty(t, issuer, { grant_types: ['authorization_code', 'refresh_token'] })
        const { tokens } = await signIn(dynamic, person)
        const refreshed = await client.refreshTokenGrant(dynamic.config, tokens.refresh_token ?? '')
        t.equal(refreshed.claims()?.sub, person.id)
      })

      for (const member of ['logo_uri', 'policy_uri', 'tos_uri', 'jwks_uri'] as const) {
        t.test(`oidcc-registration-${member.replace('_', '-')}`, async (t) => {
          // Metadata the service does not keep is not registered, and not echoed (RFC 7591, 3.2.1).
          const { status, body } = await register(issuer, { redirect_uris: [party.redirectUri], [member]: `${party.rp}/${member}` })
          t.equal(status, 201)
          t.notOk(member in body, `${member} is not echoed: the service does not keep it`)
        })
      }

      for (const [module, metadata] of [
        ['oidcc-registration-sector-uri', { subject_type: 'pairwise', sector_identifier_uri: 'https://rp.example.com/sector.json' }],
        ['oidcc-registration-sector-bad', { subject_type: 'pairwise', sector_identifier_uri: 'https://rp.example.com/bad.json' }],
        ['oidcc-userinfo-rs256', { userinfo_signed_response_alg: 'RS256' }],
        ['oidcc-request-uri-signed-rs256', { request_object_signing_alg: 'RS256' }],
        ['oidcc-request-uri-unsigned', { request_object_signing_alg: 'none' }],
        ['oidcc-ensure-request-object-with-redirect-uri', { request_object_signing_alg: 'RS256' }],
        ['oidcc-ensure-client-assertion-with-iss-aud-succeeds', { token_endpoint_auth_method: 'private_key_jwt' }],
        ['oidcc-refresh-token-rp-key-rotation', { token_endpoint_auth_method: 'private_key_jwt' }]
      ] as const) {
        t.test(module, async (t) => {
          // What the service does not offer (pairwise subjects, signed userinfo, request objects,
          // private_key_jwt) is refused at registration, never registered and then ignored.
          const refused = await register(issuer, { redirect_uris: [party.redirectUri], ...metadata })
          t.equal(refused.status, 400)
          t.equal(refused.body.error, 'invalid_client_metadata')
        })
      }

      t.test('oidcc-server-rotate-keys', async (t) => {
        // Two instances on one database: the second starts after the rotation (docs/operations.md, "ID-token keys").
        const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
        const running = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
        const before = await (await fetch(`${running.issuer}/oidc/jwks`)).json() as { keys: Array<{ kid: string }> }
        const keys = running.app.services.idTokenKeys
        await keys.stage()
        t.equal(await keys.activate(), 2, 'a new generation signs from the next start')
        const restarted = await startAuthorizationServer(t, null, { DATABASE_URL: databaseUrl })
        const moved = await relyingParty(t, restarted, { name: 'After rotation', ...PEOPLE })
        const { tokens } = await signIn(moved, await createAccount(restarted.app))
        const kid = decodeProtectedHeader(tokens.id_token ?? '').kid
        t.notOk(before.keys.some((key) => key.kid === kid), 'signed with a new key')
        const after = await (await fetch(`${restarted.issuer}/oidc/jwks`)).json() as { keys: Array<{ kid: string }> }
        t.ok(before.keys.every((old) => after.keys.some((key) => key.kid === old.kid)), 'the former keys are still published')
      })
    })

    t.test('oidcc-rp-initiated-logout-certification-test-plan', async (t) => {
      const person = await createAccount(app)
      /** A person signed in for `party`: the browser and the ID token. */
      const signedIn = async () => {
        const { tokens, browser } = await signIn(party, person)
        return { browser, idToken: tokens.id_token ?? '' }
      }
      /** Whether `browser` is still signed in at the authorization server (prompt=none answers a code). */
      const stillSignedIn = async (browser: CookieBrowser) =>
        new URL((await answerTo(browser, (await request(party, { prompt: 'none' })).url)).url).searchParams.has('code')
      const postLogout = `${party.rp}/signed-out`
      const logoutPage = async (browser: CookieBrowser, parameters: Record<string, string>) => {
        const url = new URL(discovery.end_session_endpoint)
        for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value)
        const { response, url: at } = await browser.follow(url.href)
        return { status: response.status, html: await response.text(), at }
      }

      t.test('oidcc-rp-initiated-logout-discovery-endpoint-verification', async (t) => {
        t.equal(discovery.end_session_endpoint, `${issuer}/oidc/session/end`)
      })

      t.test('oidcc-rp-initiated-logout', async (t) => {
        const { browser, idToken } = await signedIn()
        const page = await logoutPage(browser, { id_token_hint: idToken, post_logout_redirect_uri: postLogout, state: 'xyz' })
        t.equal(page.status, 200)
        const { url } = await submit(browser, page.html, page.at, { logout: 'yes' })
        t.equal(url, `${postLogout}?state=xyz`, 'back to the registered address with the state')
        t.notOk(await stillSignedIn(browser), 'signed out')
      })

      t.test('oidcc-rp-initiated-logout-no-state', async (t) => {
        const { browser, idToken } = await signedIn()
        const page = await logoutPage(browser, { id_token_hint: idToken, post_logout_redirect_uri: postLogout })
        t.equal((await submit(browser, page.html, page.at, { logout: 'yes' })).url, postLogout, 'no state, none added')
      })

      t.test('oidcc-rp-initiated-logout-no-post-logout-redirect-uri', async (t) => {
        const { browser, idToken } = await signedIn()
        const page = await logoutPage(browser, { id_token_hint: idToken })
        const { url, response } = await submit(browser, page.html, page.at, { logout: 'yes' })
        t.ok(url.startsWith(`${issuer}/`), 'stays on the service')
        t.match(await response.text(), /You are signed out/)
        t.notOk(await stillSignedIn(browser))
      })

      t.test('oidcc-rp-initiated-logout-no-params', async (t) => {
        const { browser } = await signedIn()
        const page = await logoutPage(browser, {})
        const { response } = await submit(browser, page.html, page.at, { logout: 'yes' })
        t.match(await response.text(), /You are signed out/)
        t.notOk(await stillSignedIn(browser))
      })

      t.test('oidcc-rp-initiated-logout-only-state', async (t) => {
        const { browser } = await signedIn()
        const page = await logoutPage(browser, { state: 'xyz' })
        const { url } = await submit(browser, page.html, page.at, { logout: 'yes' })
        t.ok(url.startsWith(`${issuer}/`), 'a state alone sends the browser nowhere')
      })

      t.test('oidcc-rp-initiated-logout-no-id-token-hint', async (t) => {
        const { browser } = await signedIn()
        const clientId = party.config.clientMetadata().client_id
        const page = await logoutPage(browser, { post_logout_redirect_uri: postLogout, client_id: clientId })
        const { url } = await submit(browser, page.html, page.at, { logout: 'yes' })
        t.equal(url, postLogout, 'the client named by client_id: its registered address')
      })

      t.test('oidcc-rp-initiated-logout-bad-post-logout-redirect-uri', async (t) => {
        const { browser, idToken } = await signedIn()
        const page = await logoutPage(browser, { id_token_hint: idToken, post_logout_redirect_uri: `${party.rp}/not-registered` })
        t.equal(page.status, 400)
        t.match(page.html, /Something went wrong/)
        t.ok(await stillSignedIn(browser), 'nothing ended')
      })

      t.test('oidcc-rp-initiated-logout-query-added-to-post-logout-redirect-uri', async (t) => {
        const { browser, idToken } = await signedIn()
        const page = await logoutPage(browser, { id_token_hint: idToken, post_logout_redirect_uri: `${postLogout}?extra=1` })
        t.equal(page.status, 400)
      })

      t.test('oidcc-rp-initiated-logout-modified-id-token-hint', async (t) => {
        const { browser, idToken } = await signedIn()
        const [header, payload, signature = ''] = idToken.split('.')
        const modified = `${header}.${payload}.${signature.slice(0, -4)}AAAA`
        const page = await logoutPage(browser, { id_token_hint: modified, post_logout_redirect_uri: postLogout })
        t.equal(page.status, 400, 'an ID token whose signature does not verify is refused')
        t.ok(await stillSignedIn(browser))
      })

      t.test('oidcc-rp-initiated-logout-bad-id-token-hint', async (t) => {
        const { browser } = await signedIn()
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
        const foreign = await new SignJWT({ sub: person.id }).setProtectedHeader({ alg: 'RS256', kid: 'foreign' }).setIssuer(issuer)
          .setAudience(party.config.clientMetadata().client_id).setIssuedAt().setExpirationTime('5m').sign(privateKey)
        const page = await logoutPage(browser, { id_token_hint: foreign, post_logout_redirect_uri: postLogout })
        t.equal(page.status, 400, 'an ID token the service did not sign is refused')
        t.ok(await stillSignedIn(browser))
      })
    })

    t.test('the consent page of a first sign-in carries its anti-forgery token', async (t) => {
      // (A guard of this mirror itself: the flows above go through the real pages.)
      const { response } = await new CookieBrowser(issuer).follow((await request(party)).url)
      t.not(formToken(await response.text()), '')
    })
  })
}
