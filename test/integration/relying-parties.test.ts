/**
 * The relying parties people deploy, signing in with the service's authorization server as
 * docs/integration.md configures them, on 127.0.0.1: Apache's mod_auth_openidc and a Python
 * application with Authlib and PyJWT, from Debian's packages (which `.ci/run` installs), and
 * Auth.js, from test/integration/authjs/ (installed by `npm test`'s pretest).
 */
import { execFile, spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { generateKeyPair, JWT_ALGORITHMS } from '../../src/security/signing-keys.js'
import { createAccount } from '../helpers/accounts.js'
import { CookieBrowser, formToken, startAuthorizationServer } from '../helpers/authorization-server.js'
import { integrationSnippet } from '../helpers/integration-guide.js'
import { apacheWithOpenIdc, startApache } from '../helpers/servers/apache.js'

const run = promisify(execFile)

/** The issuer, client and addresses the snippets name, replaced by the test's own. */
const ISSUER = 'https://id.example.com'
const RP = 'https://wiki.example.com'

/**
 * Signs `person` in on the service's pages the browser is sent to from `start` (posting `form`
 * there, if given), allowing the application; answers where the browser ended: where it left the
 * service, or (`anywhere`) the page it reached on this machine.
 */
async function signInOnPages (
  browser: CookieBrowser, start: string, person: { email: string, password: string },
  { anywhere = false, form }: { anywhere?: boolean, form?: Record<string, string> } = {}
) {
  let { response, url } = await browser.follow(start, form === undefined ? {} : { form }, { anywhere })
  for (let step = 0; step < 3 && url.includes('/oidc/interaction/'); step++) {
    const html = await response.text()
    const signInPage = html.includes('name="password"')
    const credentials: Record<string, string> = signInPage ? { email: person.email, password: person.password } : {}
    const form: Record<string, string> = { csrf: formToken(html), ...credentials }
    const next = await browser.follow(`${url}/${signInPage ? 'login' : 'consent'}`, { form }, { anywhere })
    response = next.response
    url = next.url
  }
  return { response, url }
}

t.test('Apache mod_auth_openidc, configured as docs/integration.md has it, signs people in under every JWT_ALGORITHM', async (t) => {
  const apache = integrationSnippet('apache', 'OIDCProviderMetadataURL')
  if (!apacheWithOpenIdc()) {
    t.comment('not run: no Apache with mod_auth_openidc here (Debian: apt-get install apache2 libapache2-mod-auth-openidc); .ci/run installs it')
    return
  }
  const { stdout: version } = await run('dpkg-query', ['-W', '-f', '$' + '{Version}', 'libapache2-mod-auth-openidc'])
  t.comment(`mod_auth_openidc ${version}`)
  for (const algorithm of JWT_ALGORITHMS) {
    const key: Record<string, string> = algorithm === 'HS256' ? {} : { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: generateKeyPair(algorithm).privateKey }
    const server = await startAuthorizationServer(t, null, key)
    const person = await createAccount(server.app)
    const site = await startApache(t, async (base) => {
      // Registered through the admin API as the guide has it, with its defaults (RS256 ID tokens).
      const registered = await server.register({ name: 'Wiki', redirect_uris: [`${base}/protected/redirect_uri`], grant_types: ['authorization_code'], scopes: ['openid', 'email', 'profile'] })
      return apache
        .replace(/^LoadModule .*$/m, '')
        .replaceAll(`${ISSUER}/`, `${server.issuer}/`)
        .replaceAll(`${RP}/`, `${base}/`)
        .replace('CLIENT_ID_FROM_CLIENT_CREATE', registered.id)
        .replace('CLIENT_SECRET_FROM_CLIENT_CREATE', registered.secret)
    })
    const browser = new CookieBrowser(server.issuer)
    const { response, url } = await signInOnPages(browser, `${site.base}/protected/index.html`, person, { anywhere: true })
    t.equal(url, `${site.base}/protected/index.html`, `${algorithm}: back at the protected page`)
    const refusal = response.status === 200 ? '' : `: ${await response.text()} ${await site.errors()}`
    t.equal(response.status, 200, `${algorithm}: mod_auth_openidc let the person in${refusal}`)
    t.equal(response.headers.get('x-email'), person.email, `${algorithm}: with the address from the ID token and userinfo`)
  }
})

t.test('a Python application with Authlib and PyJWT, as docs/integration.md has it, signs a person in', async (t) => {
  const code = integrationSnippet('python', 'OAuth2Session')
  const python = '/usr/bin/python3'
  try {
    await run(python, ['-c', 'import authlib, jwt, requests'])
  } catch {
    t.comment('not run: no Python with Authlib, PyJWT and requests here (Debian: apt-get install python3-authlib python3-jwt python3-requests); .ci/run installs them')
    return
  }
  const server = await startAuthorizationServer(t, null)
  const person = await createAccount(server.app)
  const redirectUri = `${RP}/callback`
  const registered = await server.register({ name: 'Reports', redirect_uris: [redirectUri], grant_types: ['authorization_code'], scopes: ['openid', 'email', 'profile'] })
  // As a reader adapts it: the service's address, the client's registration; the browser's part is the test's.
  const program = code
    .replaceAll(ISSUER, server.issuer)
    .replace('CLIENT_ID_FROM_CLIENT_CREATE', registered.id)
    .replace('CLIENT_SECRET_FROM_CLIENT_CREATE', registered.secret)
  const application = spawn(python, ['-u', '-c', program], {
    env: { ...process.env, OAUTHLIB_INSECURE_TRANSPORT: '1', AUTHLIB_INSECURE_TRANSPORT: '1' }, stdio: ['pipe', 'pipe', 'inherit']
  })
  t.teardown(() => { application.kill() })
  const lines = createInterface({ input: application.stdout })
  const [authorizationUrl] = await once(lines, 'line') as [string]
  t.match(authorizationUrl, `${server.issuer}/oidc/auth?`, 'the application sends the browser to the service')
  const browser = new CookieBrowser(server.issuer)
  const { url } = await signInOnPages(browser, authorizationUrl, person)
  t.match(url, `${redirectUri}?code=`, 'back at the application with a code')
  application.stdin.end(`${url}\n`)
  const [claims] = await once(lines, 'line') as [string]
  t.match(JSON.parse(claims), {
    id_token: { iss: server.issuer, sub: person.id, aud: registered.id },
    userinfo: { sub: person.id, email: person.email }
  })
  const [exit] = await once(application, 'exit') as [number]
  t.equal(exit, 0)
})

/** Auth.js's core (@auth/core), installed apart: its optional peers are older than the service's. */
const AUTHJS = new URL('./authjs/node_modules/@auth/core/index.js', import.meta.url)

/** An HTTP server on 127.0.0.1 handing every request to `handle` as a web Request; its address. */
async function webServer (t: Test, handle: (request: Request) => Promise<Response>): Promise<string> {
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', () => {
      const headers = new Headers()
      for (let index = 0; index < incoming.rawHeaders.length; index += 2) headers.append(incoming.rawHeaders[index] ?? '', incoming.rawHeaders[index + 1] ?? '')
      const body = ['GET', 'HEAD'].includes(incoming.method ?? 'GET') ? undefined : Buffer.concat(chunks)
      void handle(new Request(`http://${incoming.headers.host ?? ''}${incoming.url ?? '/'}`, { method: incoming.method, headers, body }))
        .then(async (response) => {
          const cookies = response.headers.getSetCookie()
          outgoing.writeHead(response.status, [...[...response.headers].filter(([name]) => name !== 'set-cookie'), ...cookies.map((cookie) => ['set-cookie', cookie])].flat())
          outgoing.end(Buffer.from(await response.arrayBuffer()))
        })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('Auth.js, configured as docs/integration.md has it, signs a person in', async (t) => {
  type AuthHandler = (request: Request, config: Record<string, unknown>) => Promise<Response>
  const { Auth } = await import(AUTHJS.href) as { Auth: AuthHandler }
  const server = await startAuthorizationServer(t, null)
  const person = await createAccount(server.app, { name: 'Ada Lovelace' })
  // The snippet as a reader writes it, NextAuth's configuration taken as it is: its provider,
  // with the service's address, and the client registered for Auth.js's callback.
  const code = integrationSnippet('ts', "from 'next-auth'")
  const configuration = code.replace(/^import .*$/m, '').replace(/export const \{[^}]*\} = NextAuth\(/, 'export default (')
    .replaceAll(ISSUER, server.issuer)
  let config: Record<string, unknown> = {}
  const site = await webServer(t, async (request) => {
    if (!new URL(request.url).pathname.startsWith('/api/auth/')) return new Response('Home', { status: 200 })
    return await Auth(request, { ...config, secret: 'a-secret-of-the-application-of-32-chars', trustHost: true, basePath: '/api/auth' })
  })
  const registered = await server.register({
    name: 'Photo Gallery', redirect_uris: [`${site}/api/auth/callback/users-api`], grant_types: ['authorization_code'], scopes: ['openid', 'profile', 'email']
  })
  process.env.USERS_API_CLIENT_ID = registered.id
  process.env.USERS_API_CLIENT_SECRET = registered.secret
  t.teardown(() => { delete process.env.USERS_API_CLIENT_ID; delete process.env.USERS_API_CLIENT_SECRET })
  const module = `data:text/javascript,${encodeURIComponent(configuration)}`
  config = (await import(module) as { default: Record<string, unknown> }).default

  const browser = new CookieBrowser(server.issuer)
  const csrf = await (await browser.request(`${site}/api/auth/csrf`)).json() as { csrfToken: string }
  const { url } = await signInOnPages(browser, `${site}/api/auth/signin/users-api`, person, {
    anywhere: true, form: { csrfToken: csrf.csrfToken, callbackUrl: `${site}/` }
  })
  t.equal(url, `${site}/`, 'back at the application')
  const session = await (await browser.request(`${site}/api/auth/session`)).json() as { user?: { email?: string, name?: string } }
  t.match(session.user, { email: person.email, name: 'Ada Lovelace' }, 'Auth.js holds the person from the ID token and userinfo')
})
