/** The service as an authorization server, listening on 127.0.0.1, for tests of it from outside. */
import { createServer, type Server } from 'node:http'
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

/**
 * A browser without a browser: fetch with a cookie jar, following redirects by hand within the
 * service (never to another address: the relying party's is answered, not followed).
 */
/** A request's method and form (sent URL-encoded). */
interface RequestInit { method?: string, form?: Record<string, string> }

export class CookieBrowser {
  readonly #cookies = new Map<string, string>()
  constructor (private readonly issuer: string) {}

  async request (url: string, init: RequestInit = {}): Promise<Response> {
    const headers: Record<string, string> = { cookie: [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
    if (init.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(new URL(url, this.issuer), {
      method: init.method ?? (init.form === undefined ? 'GET' : 'POST'),
      headers,
      body: init.form === undefined ? undefined : new URLSearchParams(init.form).toString(),
      redirect: 'manual'
    })
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';')
      const at = pair.indexOf('=')
      const name = pair.slice(0, at)
      const value = pair.slice(at + 1)
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(cookie)) this.#cookies.delete(name)
      else this.#cookies.set(name, value)
    }
    return response
  }

  /** Follows the service's redirects; stops at a page, or at a redirect out of the service. */
  async follow (url: string, init: RequestInit = {}): Promise<{ response: Response, url: string }> {
    let response = await this.request(url, init)
    let at = new URL(url, this.issuer).href
    while (response.status >= 300 && response.status < 400) {
      at = new URL(response.headers.get('location') ?? '', at).href
      if (!at.startsWith(`${this.issuer}/`)) return { response, url: at }
      response = await this.request(at)
    }
    return { response, url: at }
  }
}

/** The anti-forgery token of a page's forms. */
export function formToken (html: string): string {
  return /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ''
}

/**
 * Runs an authorization request to its end as a person would: signs in with the password on
 * the service's page and allows on its consent page (when asked); answers the address the
 * service sent the browser back to (the client's redirect URI with `code`, or `error`).
 */
export async function authorizeWithPassword (
  browser: CookieBrowser,
  authorizationUrl: string,
  credentials: { email: string, password: string }
): Promise<string> {
  let { response, url } = await browser.follow(authorizationUrl)
  for (let step = 0; step < 3 && url.includes('/oidc/interaction/'); step++) {
    const html = await response.text()
    const csrf = formToken(html)
    const next = html.includes('name="password"')
      ? await browser.follow(`${url}/login`, { form: { csrf, ...credentials } })
      : await browser.follow(`${url}/consent`, { form: { csrf } })
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
