import { createHash, randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** How the provider behaves for the next calls. */
export type ProviderMode = 'ok' | 'token-4xx' | 'token-5xx' | 'token-timeout' | 'userinfo-5xx' | 'token-error-200' |
  /** The profile, padded past `oversizedBytes`: with its length declared, or streamed without. */
  'userinfo-oversized' | 'userinfo-oversized-streamed'

interface Grant { challenge: string, profile: Record<string, unknown>, emails?: unknown[] }

/**
 * A real OAuth 2.0 provider on 127.0.0.1 for the tests: it checks what the service sends
 * (client credentials, redirect URI, grant type, PKCE verifier against the challenge, the
 * GitHub JSON Accept header, bearer tokens) exactly as a provider would.
 */
export class TestProvider {
  readonly #server: Server
  readonly #grants = new Map<string, Grant>()
  readonly #tokens = new Map<string, Grant>()
  readonly requests: Array<{ method: string, path: string, headers: IncomingMessage['headers'], body: string }> = []
  mode: ProviderMode = 'ok'
  oversizedBytes = 0
  base = ''

  constructor (private readonly client: { id: string, secret: string, redirectUri: string, githubStyle?: boolean }) {
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
        if (request.method === 'POST' && path === '/token') return this.#token(request, body, send)
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

  /** The user approved at the provider: a code bound to the PKCE challenge and this profile. */
  approve (challenge: string, profile: Record<string, unknown>, emails?: unknown[]): string {
    const code = randomBytes(12).toString('base64url')
    this.#grants.set(code, { challenge, profile, ...(emails !== undefined && { emails }) })
    return code
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

  #token (request: IncomingMessage, body: string, send: (status: number, payload: unknown, type?: string) => void): void {
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
    const payload = { access_token: accessToken, token_type: 'bearer', scope: 'read' }
    // GitHub answers form-encoded unless asked for JSON.
    if (this.client.githubStyle === true && request.headers.accept !== 'application/json') {
      return send(200, new URLSearchParams(payload).toString(), 'application/x-www-form-urlencoded')
    }
    send(200, payload)
  }
}
