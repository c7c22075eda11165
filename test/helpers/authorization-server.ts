/** The service as an authorization server, listening on 127.0.0.1, for tests of it from outside. */
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import * as client from 'openid-client'
import { freePort } from '../../bench/free-port.js'
import { createAccount, type Account } from './accounts.js'
import { build } from './app.js'
import type { TestContext } from './context.js'

export interface RunningAuthorizationServer {
  app: FastifyInstance
  /** The issuer, and the service's address. */
  issuer: string
  admin: Account
  /** Registers a client through the admin API; its secret, for a confidential one. */
  register: (client: Record<string, unknown>) => Promise<{ id: string, secret: string }>
}

/**
 * The service with JWT_ISSUER its own address (the authorization server on); an administrator to
 * register clients. `host` names it in the issuer: `localhost` for WebAuthn, which takes no IP
 * address as its relying party (it listens on 127.0.0.1 either way).
 */
export async function startAuthorizationServer (
  t: TestContext,
  postgresUrl: string | null,
  env: Record<string, string> | ((issuer: string) => Promise<Record<string, string>>) = {},
  host = '127.0.0.1'
): Promise<RunningAuthorizationServer> {
  const port = await freePort()
  const issuer = `http://${host}:${port}`
  const variables = typeof env === 'function' ? await env(issuer) : env
  // Passkeys for the pages' origin, where it can be a relying party's.
  const webauthn: Record<string, string> = host === 'localhost' ? { WEBAUTHN_RP_ID: host, WEBAUTHN_ORIGINS: issuer } : {}
  const app = await build(t, {
    postgresUrl, env: { JWT_ISSUER: issuer, AUTHORIZATION_SERVER_SCOPES: 'api:read,api:write', ...webauthn, ...variables }
  })
  await app.listen({ port, host: '127.0.0.1' })
  const admin = await createAccount(app, { roles: ['super_admin'] })
  return {
    app,
    issuer,
    admin,
    async register (client) {
      const answer = await app.inject({
        method: 'POST', url: '/api/v1/oauth-clients', headers: { authorization: `Bearer ${admin.token}` }, payload: client
      })
      if (answer.statusCode !== 201) throw new Error(`client registration failed: ${answer.body}`)
      const { id, client_secret: secret } = answer.json().data
      return { id, secret: secret ?? '' }
    }
  }
}

/** A relying party's callback on 127.0.0.1: it only answers 200, the test reads the address. */
export async function callbackServer (t: TestContext): Promise<string> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    response.end('<!doctype html><title>Relying party</title><p>Back at the application.</p>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/**
 * A relying party of `server`: its callback server on 127.0.0.1, registered with `/callback` and
 * `/signed-out` there, and openid-client's configuration of it from discovery.
 */
export async function relyingParty (
  t: TestContext,
  server: RunningAuthorizationServer,
  registration: { name: string, grant_types: string[], scopes: string[] }
) {
  const rp = await callbackServer(t)
  const redirectUri = `${rp}/callback`
  const registered = await server.register({ ...registration, redirect_uris: [redirectUri], post_logout_redirect_uris: [`${rp}/signed-out`] })
  const config = await client.discovery(new URL(server.issuer), registered.id, registered.secret, undefined, insecure)
  return { rp, redirectUri, registered, config }
}

/** A request's method and form (sent URL-encoded). */
interface RequestInit { method?: string, form?: Record<string, string>, headers?: Record<string, string> }

/** A cookie as a browser keeps it: for its host (any port, as browsers have it) and under its path. */
interface KeptCookie { name: string, value: string, host: string, path: string }

/** One request as the browser sends it, with node:http (no header of its own added), answered as a Response. */
async function navigate (url: URL, method: string, headers: Record<string, string>, body?: string): Promise<Response> {
  return await new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers }, (incoming) => {
      const chunks: Buffer[] = []
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
      incoming.on('error', reject)
      incoming.on('end', () => {
        const answered = new Headers()
        for (let index = 0; index < incoming.rawHeaders.length; index += 2) answered.append(incoming.rawHeaders[index] ?? '', incoming.rawHeaders[index + 1] ?? '')
        const status = incoming.statusCode ?? 500
        resolve(new Response([204, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: answered }))
      })
    })
    request.on('error', reject)
    request.end(body)
  })
}

/** Whether `path` is under the cookie path `under` (RFC 6265, 5.1.4). */
function pathMatches (path: string, under: string): boolean {
  return path === under || (path.startsWith(under) && (under.endsWith('/') || path.charAt(under.length) === '/'))
}

/**
 * A browser without a browser: fetch with a cookie jar that keeps each cookie for its host and
 * path, as browsers do (RFC 6265: a cookie whose Path is `/oidc/interaction/<uid>` is not sent
 * to `/oidc/federated`), following redirects by hand within the service, or (`anywhere`) to any
 * address of this machine, never elsewhere.
 */
export class CookieBrowser {
  readonly #cookies: KeptCookie[] = []
  constructor (private readonly issuer: string) {}

  async request (url: string, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url, this.issuer)
    if (!['127.0.0.1', 'localhost'].includes(target.hostname)) throw new Error(`a test browser goes nowhere but this machine, not to ${target.host}`)
    const sent = this.#cookies
      .filter(({ host, path }) => host === target.hostname && pathMatches(target.pathname, path))
    // What a browser sends when it navigates, so that pages are answered as pages (Node's fetch
    // would say `Sec-Fetch-Mode: cors`, which relying parties answer as a script's request).
    const headers: Record<string, string> = {
      cookie: sent.map(({ name, value }) => `${name}=${value}`).join('; '),
      accept: 'text/html,application/xhtml+xml,*/*;q=0.8',
      'sec-fetch-mode': 'navigate',
      'sec-fetch-dest': 'document',
      ...init.headers
    }
    if (init.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const body = init.form === undefined ? undefined : new URLSearchParams(init.form).toString()
    const response = await navigate(target, init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body)
    for (const header of response.headers.getSetCookie()) this.#keep(header, target)
    return response
  }

  /** Another browser holding this one's cookies as they are now: a thief's copy, for replay. */
  copy (): CookieBrowser {
    const copied = new CookieBrowser(this.issuer)
    copied.#cookies.push(...this.#cookies.map((cookie) => ({ ...cookie })))
    return copied
  }

  #keep (header: string, from: URL): void {
    const [pair = '', ...attributes] = header.split(';').map((part) => part.trim())
    const at = pair.indexOf('=')
    const name = pair.slice(0, at)
    const value = pair.slice(at + 1)
    const attribute = (wanted: string) => attributes.find((item) => item.toLowerCase().startsWith(`${wanted}=`))?.slice(wanted.length + 1)
    // The default path: the request path up to its last slash (RFC 6265, 5.1.4).
    const path = attribute('path') ?? (from.pathname.lastIndexOf('/') > 0 ? from.pathname.slice(0, from.pathname.lastIndexOf('/')) : '/')
    const existing = this.#cookies
      .findIndex((kept) => kept.name === name && kept.host === from.hostname && kept.path === path)
    if (existing >= 0) this.#cookies.splice(existing, 1)
    const expires = attribute('expires')
    const gone = value === '' || attribute('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now())
    if (!gone) this.#cookies.push({ name, value, host: from.hostname, path })
  }

  /**
   * Follows redirects (a 307 or 308 sends the same request again, as browsers do); stops at a
   * page, or at a redirect out of the service (unless `anywhere`).
   */
  async follow (
    url: string, init: RequestInit = {}, { anywhere = false } = {}
  ): Promise<{ response: Response, url: string }> {
    let response = await this.request(url, init)
    let at = new URL(url, this.issuer).href
    while (response.status >= 300 && response.status < 400) {
      at = new URL(response.headers.get('location') ?? '', at).href
      if (!anywhere && !at.startsWith(`${this.issuer}/`)) return { response, url: at }
      response = await this.request(at, [307, 308].includes(response.status) ? init : {})
    }
    return { response, url: at }
  }
}

/** The anti-forgery token of a page's forms. */
export function formToken (html: string): string {
  return /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
}

/** A hidden field's value on a page. */
function hiddenField (html: string, name: string): string {
  return new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? ''
}

/**
 * Runs an authorization request to its end as a person would: signs in with the password on
 * the service's page (then with an authenticator app's code, when `code` gives one and the page
 * asks for it) and allows on its consent page (when asked); answers the address the service
 * sent the browser back to (the client's redirect URI with `code`, or `error`).
 */
export async function authorizeWithPassword (
  browser: CookieBrowser,
  authorizationUrl: string,
  { email, password }: { email: string, password: string },
  code?: () => string
): Promise<string> {
  let { response, url } = await browser.follow(authorizationUrl)
  for (let step = 0; step < 4 && url.includes('/oidc/interaction/'); step++) {
    const html = await response.text()
    const csrf = formToken(html)
    const carried = { csrf, mfa_token: hiddenField(html, 'mfa_token'), methods: hiddenField(html, 'methods') }
    // A form's answer is a page at the address it posted to: the interaction is the address before it.
    const interaction = /^.*\/oidc\/interaction\/[^/]+/.exec(url)?.[0] ?? url
    const next = html.includes('name="password"')
      ? await browser.follow(`${interaction}/login`, { form: { csrf, email, password } })
      : code !== undefined && carried.mfa_token !== ''
        ? await browser.follow(`${interaction}/mfa`, { form: { ...carried, code: code() } })
        : await browser.follow(`${interaction}/consent`, { form: { csrf } })
    response = next.response
    url = next.url
  }
  return url
}

/** openid-client over plain http on 127.0.0.1. */
export const insecure = { execute: [client.allowInsecureRequests] }

/** The relying party's token request for the code its redirect URI received, with the request's verifier and state. */
export async function exchange (config: client.Configuration, back: URL, request: { verifier: string, state: string }) {
  return await client.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: request.verifier, expectedState: request.state
  })
}

/** A relying party's authorization request with a fresh PKCE pair and state: its URL, verifier and state. */
export async function pkceAuthorization (
  config: client.Configuration, redirectUri: string, scope: string, extra: Record<string, string> = {}
): Promise<{ url: URL, verifier: string, state: string }> {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, scope, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state, ...extra
  })
  return { url, verifier, state }
}

/** The OAuth error a request of the relying party ended in (it must end in one). */
export async function refusal (request: Promise<unknown>): Promise<unknown> {
  try {
    await request
  } catch (error) {
    return error
  }
  throw new Error('the request was not refused')
}
