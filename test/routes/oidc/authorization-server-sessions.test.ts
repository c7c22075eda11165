import * as client from 'openid-client'
import t from 'tap'
import { createAccount, type Account, withToken } from '../../helpers/accounts.js'
import {
  authorizeWithPassword, CookieBrowser, exchange, formToken, pkceAuthorization, relyingParty, startAuthorizationServer
} from '../../helpers/authorization-server.js'
import { backends } from '../../helpers/database.js'
import { uniqueSlug } from '../../helpers/organizations.js'

/** How a session opened at the pages is listed (src/services/sessions/sessions.ts). */
const AT_AUTHORIZATION_SERVER = 'authorization-server'

interface ListedSession { id: string, device: { id?: string } }

for (const backend of backends()) {
  t.test(`the authorization server's sessions are the service's sessions (${backend.name})`, async (t) => {
    const server = await startAuthorizationServer(t, backend.url, { SESSION_MAX_CONCURRENT: '3' })
    const { app, issuer } = server
    const { rp, redirectUri, registered, config } = await relyingParty(t, server, {
      name: 'Relying party', grant_types: ['authorization_code', 'refresh_token'], scopes: ['openid', 'profile', 'email', 'offline_access', 'organization']
    })

    async function authorization (scope = 'openid email', extra: Record<string, string> = {}) {
      const request = await pkceAuthorization(config, redirectUri, scope, extra)
      return { ...request, url: request.url.href }
    }

    /** Where an authorization request in `browser` ends with no one typing: a code (signed in) or the sign-in page. */
    async function silently (browser: CookieBrowser): Promise<'code' | 'sign-in page' | string> {
      const { response, url } = await browser.follow((await authorization()).url)
      if (url.startsWith(`${redirectUri}?code=`)) return 'code'
      return (await response.text()).includes('name="password"') ? 'sign-in page' : url
    }

    async function sessionsOf (person: Account): Promise<ListedSession[]> {
      const answer = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/sessions' }))
      t.equal(answer.statusCode, 200)
      return answer.json().data
    }

    async function atAuthorizationServer (person: Account): Promise<ListedSession[]> {
      return (await sessionsOf(person)).filter((session) => session.device.id === AT_AUTHORIZATION_SERVER)
    }

    async function signedInAtPages (person: Account, browser = new CookieBrowser(issuer)) {
      const request = await authorization()
      const back = await authorizeWithPassword(browser, request.url, person)
      t.match(back, new RegExp(`^${redirectUri}\\?code=`))
      return { browser, tokens: await exchange(config, new URL(back), request) }
    }

    t.test('a sign-in at the pages opens a session of the service: listed, and ended from the API like any', async (t) => {
      const person = await createAccount(app)
      const { browser } = await signedInAtPages(person)
      const listed = await atAuthorizationServer(person)
      t.equal(listed.length, 1, 'listed beside the API session')
      t.equal((await sessionsOf(person)).length, 2)
      t.equal(await silently(browser), 'code', 'the browser is signed in there: a second application request is answered at once')

      const ended = await app.inject(withToken(person.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${listed[0]?.id ?? ''}` }))
      t.equal(ended.statusCode, 204)
      t.equal(await silently(browser), 'sign-in page', 'ended from the API, the browser is signed out at the authorization server')
    })

    t.test('the tokens bound to the sign-in end with the session; those of offline_access outlive it', async (t) => {
      const person = await createAccount(app)
      const { browser, tokens } = await signedInAtPages(person)
      const offline = await authorization('openid offline_access', { prompt: 'consent' })
      const back = await authorizeWithPassword(browser, offline.url, person)
      const lasting = await exchange(config, new URL(back), offline)
      t.equal(lasting.scope, 'openid offline_access')
      const [session] = await atAuthorizationServer(person)
      const ended = await app.inject(withToken(person.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${session?.id ?? ''}` }))
      t.equal(ended.statusCode, 204)
      await t.rejects(client.fetchUserInfo(config, tokens.access_token, person.id), 'the access token of the sign-in reads nothing')
      await t.rejects(client.refreshTokenGrant(config, tokens.refresh_token ?? ''), 'its refresh token is refused')
      const refreshed = await client.refreshTokenGrant(config, lasting.refresh_token ?? '')
      t.match(await client.fetchUserInfo(config, refreshed.access_token, person.id), { sub: person.id }, 'offline_access outlives the sign-in')
    })

    t.test('a sign-in that never came back to the authorization server opens no session', async (t) => {
      const person = await createAccount(app)
      const browser = new CookieBrowser(issuer)
      const login = await browser.follow((await authorization()).url)
      const html = await login.response.text()
      const answered = await browser.request(`${login.url}/login`, { form: { csrf: formToken(html), email: person.email, password: person.password } })
      t.equal(answered.status, 303, 'sent back into the flow, which the browser does not follow')
      t.same(await atAuthorizationServer(person), [])
    })

    t.test('another account signing in in the same browser: the first is signed out, the second signed in', async (t) => {
      const first = await createAccount(app)
      const second = await createAccount(app)
      const { browser } = await signedInAtPages(first)
      const request = await authorization('openid email', { prompt: 'login' })
      const login = await browser.follow(request.url)
      const html = await login.response.text()
      const confirm = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(html), email: second.email, password: second.password } })
      const page = await confirm.response.text()
      t.match(page, 'name="xsrf"', 'asked to sign the first account out')
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1] ?? ''
      let at = await browser.follow(`${issuer}/oidc/session/end/confirm`, { form: { xsrf, logout: 'yes' } })
      if (at.url.includes('/oidc/interaction/')) {
        const consent = await at.response.text()
        at = await browser.follow(`${at.url}/consent`, { form: { csrf: formToken(consent) } })
      }
      t.match(at.url, new RegExp(`^${redirectUri}\\?code=`))
      t.match((await exchange(config, new URL(at.url), request)).claims(), { sub: second.id })
      t.same(await atAuthorizationServer(first), [], 'the first account\'s session ended')
      t.equal((await atAuthorizationServer(second)).length, 1)
      t.equal(await silently(browser), 'code')
    })

    t.test('RP-initiated logout ends the service\'s session too', async (t) => {
      const person = await createAccount(app)
      const { browser, tokens } = await signedInAtPages(person)
      t.equal((await atAuthorizationServer(person)).length, 1)
      const logout = client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${rp}/signed-out` })
      const confirm = await browser.follow(logout.href)
      const xsrf = /name="xsrf" value="([^"]+)"/.exec(await confirm.response.text())?.[1] ?? ''
      const out = await browser.follow(`${issuer}/oidc/session/end/confirm`, { form: { xsrf, logout: 'yes' } })
      t.match(out.url, new RegExp(`^${rp}/signed-out`))
      t.same(await atAuthorizationServer(person), [], 'no longer listed')
      t.equal((await sessionsOf(person)).length, 1, 'the API session is another session, and stays')
      t.equal(await silently(browser), 'sign-in page')
    })

    t.test('the session limit counts the pages\' sessions: later sign-ins end it as the oldest', async (t) => {
      const person = await createAccount(app)
      const { browser } = await signedInAtPages(person)
      for (let signIn = 0; signIn < 2; signIn++) {
        const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: person.password } })
        t.equal(login.statusCode, 200)
      }
      t.equal(await silently(browser), 'code', 'three sessions: the first API session ended, the one at the pages kept')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: person.password } })
      const newest = { ...person, token: login.json().data.access_token as string }
      t.equal(await silently(browser), 'sign-in page', 'a fourth: the oldest, the one at the pages, ended')
      t.same(await atAuthorizationServer(newest), [])
    })

    t.test('signing in again in the same browser (prompt=login) replaces its session, at the session limit too', async (t) => {
      const person = await createAccount(app)
      const { browser } = await signedInAtPages(person)
      const [first] = await atAuthorizationServer(person)
      // The session at the pages the oldest of three, the limit: the new sign-in replaces it, and ends no other.
      const apiLogin = async () => {
        const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: person.email, password: person.password } })
        return { ...person, token: login.json().data.access_token as string }
      }
      const later = await apiLogin()
      const own = (await sessionsOf(later)).find((session) => session.device.id !== AT_AUTHORIZATION_SERVER)
      t.equal((await app.inject(withToken(later.token, { method: 'DELETE', url: `/api/v1/auth/sessions/${own?.id ?? ''}` }))).statusCode, 204)
      await apiLogin()
      t.equal((await sessionsOf(later)).length, 3)

      const again = await authorization('openid email', { prompt: 'login' })
      const back = await authorizeWithPassword(browser, again.url, person)
      t.match(back, new RegExp(`^${redirectUri}\\?code=`))
      const listed = await atAuthorizationServer(later)
      t.equal(listed.length, 1, 'one session at the pages, not two')
      t.not(listed[0]?.id, first?.id, 'the new sign-in\'s')
      t.equal((await sessionsOf(later)).length, 3, 'the API sessions kept')
      t.equal(await silently(browser), 'code')
    })

    t.test('the organization scope', async (t) => {
      /** An organization `creator` creates through the API; its id. */
      async function organization (creator: Account, name: string): Promise<string> {
        const created = await app.inject(withToken(creator.token, { method: 'POST', url: '/api/v1/organizations', payload: { name, slug: uniqueSlug() } }))
        t.equal(created.statusCode, 201)
        return created.json().data.id
      }

      /** Runs an authorization for `scope` to the consent page, in a new browser: the page and its address. */
      async function consentPage (person: Account, scope: string) {
        const browser = new CookieBrowser(issuer)
        const request = await authorization(scope)
        const login = await browser.follow(request.url)
        const html = await login.response.text()
        const consent = await browser.follow(`${login.url}/login`, { form: { csrf: formToken(html), email: person.email, password: person.password } })
        return { browser, request, url: consent.url, html: await consent.response.text() }
      }

      /** The claims userinfo answers for the tokens of a code (a scope's claims are there: OpenID Connect Core 5.4). */
      async function userinfoFor (back: string, request: { verifier: string, state: string }) {
        const tokens = await exchange(config, new URL(back), request)
        return await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck)
      }

      t.test('chosen on the consent page; userinfo carries it and the person\'s role; the grant lists it', async (t) => {
        const person = await createAccount(app)
        const first = await organization(person, 'First Ltd')
        const second = await organization(person, 'Second & Co')
        const page = await consentPage(person, 'openid organization')
        t.match(page.html, 'For which organization?')
        t.match(page.html, `value="${first}"`)
        t.match(page.html, `value="${second}"`)
        t.match(page.html, 'Second &amp; Co', 'names escaped')
        const back = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html), organization: second } })
        t.match(await userinfoFor(back.url, page.request), { sub: person.id, org_id: second, org_roles: ['owner'] })
        const grants = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/grants' }))
        t.match(grants.json().data, [{ client_id: registered.id, organization_id: second, scopes: ['openid', 'organization'] }])

        const again = await authorization('openid organization')
        const silent = await page.browser.follow(again.url)
        t.match(silent.url, new RegExp(`^${redirectUri}\\?code=`), 'remembered: not asked again')
        t.match(await userinfoFor(silent.url, again), { org_id: second })

        const another = await authorization('openid organization', { prompt: 'consent' })
        const asked = await page.browser.follow(another.url)
        const html = await asked.response.text()
        t.match(html, 'For which organization?', 'prompt=consent offers another')
        const switched = await page.browser.follow(`${asked.url}/consent`, { form: { csrf: formToken(html), organization: first } })
        t.match(await userinfoFor(switched.url, another), { org_id: first })
      })

      t.test('an organization the person is not a member of is refused; nothing is chosen', async (t) => {
        const person = await createAccount(app)
        const own = await organization(person, 'Own')
        const foreign = await organization(await createAccount(app), 'Foreign')
        const page = await consentPage(person, 'openid organization')
        const refused = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html), organization: foreign } })
        t.equal(refused.response.status, 400)
        const html = await refused.response.text()
        t.match(html, 'Choose one of your organizations.')
        t.notMatch(html, 'Foreign')
        const none = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html) } })
        t.equal(none.response.status, 400, 'a choice is required')
        const grants = await app.inject(withToken(person.token, { method: 'GET', url: '/api/v1/auth/grants' }))
        t.notOk((grants.json().data as Array<{ organization_id: string | null }>).some((grant) => grant.organization_id !== null), 'none chosen')
        const chosen = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html), organization: own } })
        t.match(await userinfoFor(chosen.url, page.request), { org_id: own })
      })

      t.test('no organization: nothing to choose, no organization claims', async (t) => {
        const person = await createAccount(app)
        const page = await consentPage(person, 'openid organization')
        t.notMatch(page.html, 'For which organization?')
        const back = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html) } })
        const info = await userinfoFor(back.url, page.request)
        t.equal(info.sub, person.id)
        t.notOk('org_id' in info)
      })

      t.test('a membership that ends takes the claims away; the next consent asks again', async (t) => {
        const owner = await createAccount(app)
        const person = await createAccount(app)
        const shared = await organization(owner, 'Shared')
        await app.database.db.insertInto('organization_members')
          .values({ organization_id: shared, user_id: person.id, role: 'member', created_at: new Date().toISOString() }).execute()
        const page = await consentPage(person, 'openid organization')
        const back = await page.browser.follow(`${page.url}/consent`, { form: { csrf: formToken(page.html), organization: shared } })
        const tokens = await exchange(config, new URL(back.url), page.request)
        t.match(await client.fetchUserInfo(config, tokens.access_token, person.id), { org_id: shared, org_roles: ['member'] })

        const removed = await app.inject(withToken(owner.token, { method: 'DELETE', url: `/api/v1/organizations/${shared}/members/${person.id}` }))
        t.equal(removed.statusCode, 204)
        const info = await client.fetchUserInfo(config, tokens.access_token, person.id)
        t.notOk('org_id' in info, 'userinfo reads the membership now')
        const ownNow = await organization(person, 'Own now')
        const again = await authorization('openid organization')
        const asked = await page.browser.follow(again.url)
        const html = await asked.response.text()
        t.match(html, 'For which organization?', 'asked again: the chosen organization is no longer theirs')
        t.match(html, `value="${ownNow}"`)
        t.notMatch(html, `value="${shared}"`)
      })
    })
  })
}
