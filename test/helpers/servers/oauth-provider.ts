import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { SignJWT, UnsecuredJWT } from 'jose'

/** How the provider behaves for the next calls. */
export type ProviderMode = 'ok' | 'token-4xx' | 'token-5xx' | 'token-timeout' | 'userinfo-5xx' | 'token-error-200' |
  /** The profile, padded past `oversizedBytes`: with its length declared, or streamed without. */
  'userinfo-oversized' | 'userinfo-oversized-streamed' |
  /** OpenID shape: the discovery document fails, or names another issuer. */
  'discovery-5xx' | 'discovery-malformed' | 'discovery-oversized' | 'discovery-other-issuer' |
  /** OpenID shape: an ID token from another issuer, signed by a key not in the JWKS, or not signed at all. */
  'id-token-wrong-iss' | 'id-token-other-key' | 'id-token-alg-none' | 'id-token-missing'

interface Grant { challenge: string, profile: Record<string, unknown>, emails?: unknown[], nonce?: string }

function rsaKey (): KeyObject {
  return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
}

/**
 * A real OAuth 2.0 provider on 127.0.0.1 for the tests: it checks what the service sends
 * (client credentials, redirect URI, grant type, PKCE verifier against the challenge, the
 * GitHub JSON Accept header, bearer tokens) exactly as a provider would. With `openId`, it
 * also serves a discovery document and a JWKS, and answers the code exchange with an ID
 * token, which the modes can break in the ways a provider (or an attacker) might.
 */
export class TestProvider {
  readonly #server: Server
  readonly #grants = new Map<string, Grant>()
  readonly #tokens = new Map<string, Grant>()
  readonly requests: Array<{ method: string, path: string, headers: IncomingMessage['headers'], body: string }> = []
  mode: ProviderMode = 'ok'
  oversizedBytes = 0
  base = ''

  readonly #signingKey = rsaKey()
  readonly #otherKey = rsaKey()

  constructor (private readonly client: {
    id: string
    secret: string
    redirectUri: string
    githubStyle?: boolean
    openId?: boolean
  }) {
    this.#server = createServer((request, response) => {
      let body = ''
      request.on('data', (chunk: Buffer) => { body += chunk.toString() })
      request.on('end', () => {
        const path = (request.url ?? '').split('?')[0] ?? ''
        this.requests.push({ method: request.method ?? '', path, headers: request.headers, body })
        const send = (status: number, payload: unknown, type = 'application/json') => {
          response.writeHead(status, { 'content-type': type })
          response.end(typeof payload === 'string' ? payload : JSON.stringify(payload))
        }
        if (request.method === 'POST' && path === '/token') {
          this.#token(request, body, send).catch((error: unknown) => { send(500, { error: String(error) }) })
          return
        }
        if (request.method === 'GET' && path === '/.well-known/openid-configuration' && this.client.openId === true) return this.#discovery(response, send)
        if (request.method === 'GET' && path === '/jwks' && this.client.openId === true) {
          return send(200, { keys: [{ ...createPublicKey(this.#signingKey).export({ format: 'jwk' }), kid: 'provider-key', alg: 'RS256', use: 'sig' }] })
        }
        if (request.method === 'GET' && (path === '/userinfo' || path === '/userinfo/emails')) {
          if (this.mode === 'userinfo-5xx') return send(503, { error: 'unavailable' })
          const grant = this.#tokens.get((request.headers.authorization ?? '').replace(/^Bearer /, ''))
          if (grant === undefined) return send(401, { error: 'invalid_token' })
          if (this.mode === 'userinfo-oversized' || this.mode === 'userinfo-oversized-streamed') {
            return this.#padded(response, grant.profile, this.mode === 'userinfo-oversized')
          }
          return send(200, path === '/userinfo' ? grant.profile : grant.emails ?? [])
        }
        send(404, { error: 'not_found' })
      })
    })
  }

  async start (): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve))
    this.base = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`
    return this
  }

  async stop (): Promise<void> {
    this.#server.closeAllConnections()
    await new Promise<void>((resolve) => this.#server.close(() => resolve()))
  }

  /**
   * The user approved at the provider: a code bound to the PKCE challenge, this profile and (OpenID) the request's
   * nonce.
   */
  approve (challenge: string, profile: Record<string, unknown>, emails?: unknown[], nonce?: string): string {
    const code = randomBytes(12).toString('base64url')
    this.#grants.set(code, {
      challenge,
      profile,
      ...(emails !== undefined && { emails }),
      ...(nonce !== undefined && { nonce })
    })
    return code
  }

  #discovery (response: ServerResponse, send: (status: number, payload: unknown, type?: string) => void): void {
    if (this.mode === 'discovery-5xx') return send(503, { error: 'unavailable' })
    if (this.mode === 'discovery-malformed') return send(200, '<html>maintenance</html>', 'text/html')
    const document = {
      issuer: this.mode === 'discovery-other-issuer' ? 'https://other.example' : this.base,
      authorization_endpoint: `${this.base}/authorize`,
      token_endpoint: `${this.base}/token`,
      userinfo_endpoint: `${this.base}/userinfo`,
      jwks_uri: `${this.base}/jwks`,
      id_token_signing_alg_values_supported: ['RS256']
    }
    if (this.mode === 'discovery-oversized') return this.#padded(response, document, true)
    send(200, document)
  }

  /** The ID token for a grant, as the mode has it. */
  async #idToken (grant: Grant): Promise<string> {
    const claims = { ...grant.profile, ...(grant.nonce !== undefined && { nonce: grant.nonce }) }
    if (this.mode === 'id-token-alg-none') return new UnsecuredJWT(claims).setIssuer(this.base).setAudience(this.client.id).setIssuedAt().setExpirationTime('5m').encode()
    return await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'provider-key' })
      .setIssuer(this.mode === 'id-token-wrong-iss' ? 'https://attacker.example' : this.base)
      .setAudience(this.client.id)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(this.mode === 'id-token-other-key' ? this.#otherKey : this.#signingKey)
  }

  /** A valid profile answer, padded to just past `oversizedBytes` and written in 64 KiB pieces. */
  #padded (response: ServerResponse, profile: Record<string, unknown>, declared: boolean): void {
    const bare = JSON.stringify({ ...profile, padding: '' })
    const body = Buffer.from(JSON.stringify({ ...profile, padding: 'x'.repeat(this.oversizedBytes + 1 - bare.length) }))
    // The service stops reading and resets the connection: later writes may fail.
    response.on('error', () => {})
    response.writeHead(200, { 'content-type': 'application/json', ...(declared && { 'content-length': body.length }) })
    for (let offset = 0; offset < body.length; offset += 65_536) response.write(body.subarray(offset, offset + 65_536))
    response.end()
  }

  async #token (
    request: IncomingMessage,
    body: string,
    send: (status: number, payload: unknown, type?: string) => void
  ): Promise<void> {
    if (this.mode === 'token-timeout') return // never answers
    if (this.mode === 'token-5xx') return send(500, { error: 'server_error' })
    if (this.mode === 'token-4xx') return send(400, { error: 'invalid_grant' })
    const form = new URLSearchParams(body)
    const grant = this.#grants.get(form.get('code') ?? '')
    const verifier = form.get('code_verifier') ?? ''
    const problems = [
      request.headers['content-type'] !== 'application/x-www-form-urlencoded' && 'not a form POST',
      form.get('client_id') !== this.client.id && 'client_id',
      form.get('client_secret') !== this.client.secret && 'client_secret',
      form.get('grant_type') !== 'authorization_code' && 'grant_type',
      form.get('redirect_uri') !== this.client.redirectUri && 'redirect_uri',
      grant === undefined && 'unknown or used code',
      grant !== undefined && createHash('sha256').update(verifier).digest('base64url') !== grant.challenge && 'PKCE verifier'
    ].filter(Boolean)
    if (this.mode === 'token-error-200') problems.push('bad_verification_code')
    if (grant !== undefined) this.#grants.delete(form.get('code') ?? '')
    if (problems.length > 0 || grant === undefined) return send(this.client.githubStyle === true ? 200 : 400, { error: 'invalid_grant', problems })
    const accessToken = randomBytes(16).toString('base64url')
    this.#tokens.set(accessToken, grant)
    const payload = {
      access_token: accessToken,
      token_type: 'bearer',
      scope: 'read',
      ...(this.client.openId === true && this.mode !== 'id-token-missing' && { id_token: await this.#idToken(grant) })
    }
    // GitHub answers form-encoded unless asked for JSON.
    if (this.client.githubStyle === true && request.headers.accept !== 'application/json') {
      return send(200, new URLSearchParams(payload).toString(), 'application/x-www-form-urlencoded')
    }
    send(200, payload)
  }
}

/**
 * A built-in provider (`key`) served by a TestProvider on 127.0.0.1, stopped at teardown, and the variables that
 * configure it.
 */
export async function providerFor (t: { teardown: (fn: () => Promise<void>) => void }, key: 'google' | 'github' | 'microsoft', redirectUri: string) {
  const provider = await new TestProvider({ id: `${key}-client`, secret: `${key}-secret`, redirectUri, githubStyle: key === 'github' }).start()
  t.teardown(async () => { await provider.stop() })
  const prefix = `OAUTH_${key.toUpperCase()}_`
  const env = {
    [`${prefix}CLIENT_ID`]: `${key}-client`,
    [`${prefix}CLIENT_SECRET`]: `${key}-secret`,
    [`${prefix}REDIRECT_URI`]: redirectUri,
    [`${prefix}AUTH_URL`]: `${provider.base}/authorize`,
    [`${prefix}TOKEN_URL`]: `${provider.base}/token`,
    [`${prefix}USERINFO_URL`]: `${provider.base}/userinfo`
  }
  return { provider, env }
}
