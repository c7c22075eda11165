import { generateKeyPairSync } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider, { type Configuration } from 'oidc-provider'

/** The standard claims an account at the provider has, those the service reads. */
export interface ProviderAccount { email?: string, email_verified?: boolean, name?: string, groups?: string[] }

const LOGIN_FORM = (uid: string) => `<!doctype html>
<html><head><title>Sign in at the provider</title></head><body>
<form method="post" action="/interaction/${uid}/login">
  <label>Login <input name="login" autocomplete="username" autofocus></label>
  <button type="submit">Sign in</button>
</form>
<form method="post" action="/interaction/${uid}/cancel"><button type="submit">Cancel</button></form>
</body></html>`

/**
 * A real OpenID provider on 127.0.0.1 for the tests: `oidc-provider`, a certified
 * implementation, with one confidential client (the service: `client_secret_post` unless
 * told otherwise, PKCE required), its own RS256 key, discovery, JWKS, and a login page of its own. Anyone may sign
 * in as any account in `accounts`, by its login; consent is given with the login.
 */
export class OpenIdTestProvider {
  readonly accounts = new Map<string, ProviderAccount>()
  issuer = ''
  #server: Server | null = null
  #provider: Provider | null = null

  constructor (private readonly client: {
    id: string
    secret: string
    redirectUri: string
    /** As the client is registered: `client_secret_post` unless given (oidc-provider's own default is basic). */
    tokenEndpointAuthMethod?: 'client_secret_post' | 'client_secret_basic'
    /** false: the profile at userinfo only, the ID token with `sub` alone (Entra ID without optional claims). */
    claimsInIdToken?: boolean
  }) {}

  async start (): Promise<this> {
    const server = createServer((request, response) => { void this.#handle(request, response) })
    this.#server = server
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    this.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const configuration: Configuration = {
      clients: [{
        client_id: this.client.id,
        client_secret: this.client.secret,
        redirect_uris: [this.client.redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: this.client.tokenEndpointAuthMethod ?? 'client_secret_post'
      }],
      jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' }] as never },
      cookies: { keys: ['test-cookie-key-that-is-long-enough'] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
      // The profile in the ID token itself, as Keycloak, Google and Okta send it, unless told otherwise.
      conformIdTokenClaims: this.client.claimsInIdToken === false,
      pkce: { required: () => true },
      ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600 },
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      findAccount: (_ctx, sub) => {
        const account = this.accounts.get(sub)
        return account === undefined ? undefined : { accountId: sub, claims: () => ({ sub, ...account }) }
      }
    }
    this.#provider = new Provider(this.issuer, configuration)
    return this
  }

  async stop (): Promise<void> {
    const server = this.#server
    if (server === null) return
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }

  async #handle (request: IncomingMessage, response: ServerResponse): Promise<void> {
    const provider = this.#provider
    if (provider === null) {
      response.writeHead(503).end()
      return
    }
    const login = /^\/interaction\/([^/]+)(\/login|\/cancel)?$/.exec((request.url ?? '').split('?')[0] ?? '')
    if (login === null) return provider.callback()(request, response)
    try {
      const details = await provider.interactionDetails(request, response)
      if (request.method === 'POST' && login[2] === '/cancel') {
        return await provider.interactionFinished(request, response, { error: 'access_denied', error_description: 'End-User aborted interaction' }, { mergeWithLastSubmission: false })
      }
      const accountId = request.method === 'POST' && login[2] === '/login' ? new URLSearchParams(await bodyOf(request)).get('login') ?? '' : ''
      if (!this.accounts.has(accountId)) {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        response.end(LOGIN_FORM(details.uid))
        return
      }
      const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) })
      grant.addOIDCScope(String(details.params.scope))
      const grantId = await grant.save()
      await provider.interactionFinished(
        request,
        response,
        { login: { accountId }, consent: { grantId } },
        { mergeWithLastSubmission: false }
      )
    } catch (error) {
      response.writeHead(400, { 'content-type': 'text/plain' })
      response.end(error instanceof Error ? error.message : 'interaction failed')
    }
  }

  /**
   * A browser's part, without a browser: follows `authorizeUrl` through the login page as
   * `login`, keeping the provider's cookies, and answers where the provider sends the browser
   * back (the service's callback URL with `code`, `state` and `iss`). `login` null: the user
   * cancels instead.
   */
  async signIn (authorizeUrl: string, login: string | null): Promise<URL> {
    const cookies = new Map<string, string>()
    const step = async (url: string, init: RequestInit = {}) => {
      const response = await fetch(new URL(url, this.issuer), {
        ...init,
        redirect: 'manual',
        headers: { ...init.headers as Record<string, string>, cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
      })
      for (const cookie of response.headers.getSetCookie()) {
        const [pair = ''] = cookie.split(';')
        const split = pair.indexOf('=')
        cookies.set(pair.slice(0, split), pair.slice(split + 1))
      }
      return response
    }
    let response = await step(authorizeUrl)
    const interaction = response.headers.get('location')
    if (interaction === null) throw new Error(`the provider did not ask for a login (${response.status}: ${await response.text()})`)
    response = await step(`${interaction}/${login === null ? 'cancel' : 'login'}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: login ?? '' }).toString()
    })
    for (let hops = 0; hops < 5; hops++) {
      const location = response.headers.get('location')
      if (location === null) throw new Error(`the provider stopped at ${response.status}: ${await response.text()}`)
      const next = new URL(location, this.issuer)
      if (next.origin !== this.issuer) return next
      response = await step(next.href)
    }
    throw new Error('the provider redirected too often')
  }
}

async function bodyOf (request: IncomingMessage): Promise<string> {
  let body = ''
  for await (const chunk of request) body += String(chunk)
  return body
}
