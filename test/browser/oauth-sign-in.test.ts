import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import { uniqueEmail } from '../helpers/accounts.js'
import { build } from '../helpers/app.js'
import type { TestContext } from '../helpers/context.js'
import { backends } from '../helpers/database.js'
import { launchChromium } from '../helpers/chromium.js'
import { OpenIdTestProvider } from '../helpers/servers/openid-provider.js'

async function listen (server: Server, t: TestContext): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * The single-page application, on an origin of its own: "Sign in" makes a PKCE pair, keeps
 * the verifier in sessionStorage and goes to the API's /authorize with redirect_to; back
 * with `?code`, it exchanges the code with the verifier and shows /auth/me.
 */
const spaPage = (api: string, provider: string) => `<!doctype html>
<html><head><meta charset="utf-8"><title>App</title></head><body>
<button id="sign-in">Sign in</button>
<pre id="result"></pre>
<script type="module">
const api = ${JSON.stringify(api)}
const result = document.getElementById('result')
const base64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '')
document.getElementById('sign-in').addEventListener('click', async () => {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)))
  sessionStorage.setItem('verifier', verifier)
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)))
  const back = location.origin + '/signed-in'
  location.assign(api + '/api/v1/auth/oauth/${provider}/authorize?redirect_to=' + encodeURIComponent(back) + '&code_challenge=' + challenge + '&code_challenge_method=S256')
})
const params = new URLSearchParams(location.search)
if (params.has('error')) result.textContent = 'error ' + params.get('error')
if (params.has('code')) {
  const exchange = await fetch(api + '/api/v1/auth/oauth/exchange', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: params.get('code'), code_verifier: sessionStorage.getItem('verifier') })
  })
  const pair = (await exchange.json()).data
  const me = await fetch(api + '/api/v1/auth/me', { headers: { authorization: 'Bearer ' + pair.access_token } })
  result.textContent = JSON.stringify({ exchange: exchange.status, me: me.status, user: (await me.json()).data })
}
</script>
</body></html>`

t.test('a single-page application on its own origin signs in through the provider\'s login page in Chromium', async (t) => {
  const browser = await launchChromium(t)

  for (const backend of backends()) {
    t.test(backend.name, async (t) => {
      const apiPort = await freePort()
      const api = `http://127.0.0.1:${apiPort}`
      const provider = await new OpenIdTestProvider({ id: 'spa-api', secret: 'spa-api-secret', redirectUri: `${api}/api/v1/auth/oauth/corp/callback` }).start()
      t.teardown(async () => await provider.stop())
      const spa = await listen(createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        response.end(spaPage(api, 'corp'))
      }), t)
      const app = await build(t, {
        postgresUrl: backend.url,
        env: {
          OAUTH_PROVIDERS: 'corp',
          OAUTH_CORP_ISSUER: provider.issuer,
          OAUTH_CORP_CLIENT_ID: 'spa-api',
          OAUTH_CORP_CLIENT_SECRET: 'spa-api-secret',
          OAUTH_CORP_REDIRECT_URI: `${api}/api/v1/auth/oauth/corp/callback`,
          OAUTH_REDIRECT_URLS: `${spa}/signed-in`,
          CORS_ORIGINS: spa
        }
      })
      await app.listen({ port: apiPort, host: '127.0.0.1' })
      const email = uniqueEmail('browser')
      provider.accounts.set('grace', { email, email_verified: true, name: 'Grace Hopper' })

      t.test('sign-in: the application, the provider\'s login form, back with a one-time code, the exchange, /auth/me', async (t) => {
        const context = await browser.newContext()
        t.teardown(async () => await context.close())
        const page = await context.newPage()
        await page.goto(`${spa}/`)
        await page.click('#sign-in')
        await page.waitForURL(`${provider.issuer}/interaction/**`)
        await page.fill('input[name=login]', 'grace')
        await page.click('text=Sign in')
        await page.waitForURL(`${spa}/signed-in?code=*`)
        t.notMatch(page.url(), /state=|iss=/, 'the application never sees the provider\'s code or state')
        await page.waitForFunction(() => document.getElementById('result')?.textContent !== '')
        const shown = JSON.parse(await page.textContent('#result') ?? '{}')
        t.match(shown, { exchange: 200, me: 200, user: { email, name: 'Grace Hopper', email_verified: true, roles: ['user'] } })
      })

      t.test('login CSRF: the callback of a flow another browser started is refused; the browser that started it still finishes it', async (t) => {
        // The attacker runs the flow up to the callback, without a browser, and plants its URL on the victim.
        const authorize = await fetch(`${api}/api/v1/auth/oauth/corp/authorize?redirect_to=${encodeURIComponent(`${spa}/signed-in`)}&code_challenge=${'A'.repeat(43)}&code_challenge_method=S256`, { redirect: 'manual' })
        const attackersCookie = (authorize.headers.getSetCookie()[0] ?? '').split(';')[0] ?? ''
        const callbackUrl = (await provider.signIn(String(authorize.headers.get('location')), 'grace')).href
        t.match(callbackUrl, /\/callback\?code=[^&]+&state=[^&]+&iss=/)

        const victim = await browser.newContext()
        t.teardown(async () => await victim.close())
        const page = await victim.newPage()
        const refused = await page.goto(callbackUrl)
        t.equal(refused?.status(), 400)
        t.equal((await refused?.json())?.error?.code, 'INVALID_OAUTH_STATE')

        const own = await fetch(callbackUrl, { redirect: 'manual', headers: { cookie: attackersCookie } })
        t.equal(own.status, 302, 'the refused browser did not spend the state')
        t.match(own.headers.get('location'), new RegExp(`^${spa}/signed-in\\?code=`))
      })
    })
  }
})
