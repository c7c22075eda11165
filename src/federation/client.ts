import { createHash, randomBytes } from 'node:crypto'
import { Errors } from '../errors.js'
import { type OAuthProvider, type OAuthProfile, type ProviderGet, usableProfile } from './providers.js'

/** Provider calls that take longer fail (502), never hang a request (docs/api.md, "Callback"). */
export const PROVIDER_TIMEOUT_MS = 5000
const USER_AGENT = 'users-api'
/**
 * The most of a provider's answer that is read. Token and profile answers are a few KiB; a
 * provider (a self-hosted one, through the URL overrides) that sends more is refused before
 * its answer can fill the heap.
 */
export const MAX_PROVIDER_ANSWER_BYTES = 1024 * 1024

/** PKCE S256: the challenge for a verifier, its SHA-256 in base64url. */
export function pkceChallenge (verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url')
}

/** PKCE S256: a random verifier kept server-side, its challenge sent to the provider. */
export function pkcePair (): { verifier: string, challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: pkceChallenge(verifier) }
}

export function providerError (detail: string): Error {
  return new Errors.OAUTH_PROVIDER_ERROR(detail)
}

/** A request to a provider, as a transport sends it. */
export interface ProviderRequest {
  method: 'GET' | 'POST'
  url: string
  headers: Record<string, string>
  body?: string
}

/**
 * How a provider is reached: its answer's status and text, or the provider's error (timed out,
 * unreachable, more than MAX_PROVIDER_ANSWER_BYTES). Providers the operator configured are
 * reached with fetch (`fetchTransport`); issuers an organization's owner entered, under the
 * outbound rule (src/services/sso/oidc-sign-in.ts).
 */
export type ProviderTransport = (request: ProviderRequest) => Promise<{ status: number, text: string }>

/** The global fetch, within `timeoutMs`. */
export function fetchTransport (timeoutMs = PROVIDER_TIMEOUT_MS): ProviderTransport {
  return async ({ method, url, headers, body }) => {
    let response: Response
    try {
      // A redirect is an answer like any other (a 3xx: the provider's error), as jose's own JWKS fetch has it.
      response = await fetch(url, { method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) })
    } catch (error) {
      throw providerError(error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable')
    }
    return { status: response.status, text: await boundedText(response) }
  }
}

/** The answer's body, read until MAX_PROVIDER_ANSWER_BYTES: beyond that the provider's error. */
async function boundedText (response: Response): Promise<string> {
  const chunks: Uint8Array[] = []
  let length = 0
  try {
    for await (const chunk of response.body ?? []) {
      length += chunk.byteLength
      // Leaving the loop cancels the rest of the answer.
      if (length > MAX_PROVIDER_ANSWER_BYTES) throw providerError(`answered more than ${MAX_PROVIDER_ANSWER_BYTES} bytes`)
      chunks.push(chunk)
    }
  } catch (error) {
    if (error instanceof Errors.OAUTH_PROVIDER_ERROR) throw error
    throw providerError(error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'answer cut short')
  }
  // As response.json() reads it: UTF-8, a leading byte-order mark dropped.
  return new TextDecoder().decode(Buffer.concat(chunks))
}

async function call (transport: ProviderTransport, request: ProviderRequest): Promise<unknown> {
  const { status, text } = await transport({ ...request, headers: { 'user-agent': USER_AGENT, ...request.headers } })
  if (status < 200 || status > 299) throw providerError(`HTTP ${status}`)
  try {
    return JSON.parse(text)
  } catch {
    throw providerError('answered something other than JSON')
  }
}

/** An authenticated GET, for the profile endpoints. */
export function providerGet (transport: ProviderTransport): ProviderGet {
  return async (url, accessToken) => await call(transport, {
    method: 'GET', url, headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }
  })
}

/** A public JSON document (an issuer's discovery document). */
export async function fetchJson (url: string, transport: ProviderTransport): Promise<unknown> {
  return await call(transport, { method: 'GET', url, headers: { accept: 'application/json' } })
}

/** A value as application/x-www-form-urlencoded writes it. */
const formEncoded = (value: string) => new URLSearchParams([['', value]]).toString().slice(1)

export interface TokenRequest {
  tokenUrl: string
  clientId: string
  clientSecret: string
  redirectUri: string
  headers: Record<string, string>
  /**
   * How the client authenticates: its secret in the form (`client_secret_post`, the built-in
   * providers'), or in HTTP Basic (`client_secret_basic`, OpenID Connect's default).
   */
  authentication?: 'client_secret_post' | 'client_secret_basic'
}

/**
 * The code exchange (docs/api.md, "Callback"): a form POST with the PKCE verifier; answers
 * the access token, and the ID token when the provider sent one.
 */
export async function exchangeCode (
  request: TokenRequest,
  code: string,
  codeVerifier: string,
  transport: ProviderTransport
): Promise<{ accessToken: string, idToken: string | null }> {
  const basic = request.authentication === 'client_secret_basic'
  const body = new URLSearchParams({
    ...(!basic && { client_id: request.clientId, client_secret: request.clientSecret }),
    code,
    grant_type: 'authorization_code',
    redirect_uri: request.redirectUri,
    code_verifier: codeVerifier
  })
  // RFC 6749, section 2.3.1: each part form-encoded before the pair is.
  const credentials = `${formEncoded(request.clientId)}:${formEncoded(request.clientSecret)}`
  const answer = await call(transport, {
    method: 'POST',
    url: request.tokenUrl,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(basic && { authorization: `Basic ${Buffer.from(credentials).toString('base64')}` }),
      ...request.headers
    },
    body: body.toString()
  }) as Record<string, unknown>
  // GitHub reports a bad code with 200 and an `error` field.
  if (typeof answer.error === 'string') throw providerError(answer.error)
  if (typeof answer.access_token !== 'string' || answer.access_token === '') throw providerError('no access token in the token response')
  return { accessToken: answer.access_token, idToken: typeof answer.id_token === 'string' ? answer.id_token : null }
}

/** The normalized profile; any failure reading it is the provider's. */
export async function fetchProfile (readProfile: OAuthProvider['readProfile'], userinfoUrl: string, accessToken: string, transport: ProviderTransport): Promise<OAuthProfile> {
  try {
    return usableProfile(await readProfile(userinfoUrl, providerGet(transport), accessToken))
  } catch (error) {
    if (error instanceof Errors.OAUTH_PROVIDER_ERROR) throw error
    throw providerError(error instanceof Error ? error.message : 'unreadable profile')
  }
}
