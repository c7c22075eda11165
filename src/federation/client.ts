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

async function call (url: string, init: RequestInit, timeoutMs: number): Promise<unknown> {
  let response: Response
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
  } catch (error) {
    throw providerError(error instanceof Error && error.name === 'TimeoutError' ? 'timed out' : 'unreachable')
  }
  if (!response.ok) throw providerError(`HTTP ${response.status}`)
  const text = await boundedText(response)
  try {
    return JSON.parse(text)
  } catch {
    throw providerError('answered something other than JSON')
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

/** An authenticated GET, for the profile endpoints. */
export function providerGet (timeoutMs = PROVIDER_TIMEOUT_MS): ProviderGet {
  return async (url, accessToken) => await call(url, {
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json', 'user-agent': USER_AGENT }
  }, timeoutMs)
}

/** A public JSON document (an issuer's discovery document). */
export async function fetchJson (url: string, timeoutMs = PROVIDER_TIMEOUT_MS): Promise<unknown> {
  return await call(url, { headers: { accept: 'application/json', 'user-agent': USER_AGENT } }, timeoutMs)
}

export interface TokenRequest {
  tokenUrl: string
  clientId: string
  clientSecret: string
  redirectUri: string
  headers: Record<string, string>
}

/**
 * The code exchange (docs/api.md, "Callback"): a form POST with the PKCE verifier; answers
 * the access token, and the ID token when the provider sent one.
 */
export async function exchangeCode (
  request: TokenRequest,
  code: string,
  codeVerifier: string,
  timeoutMs = PROVIDER_TIMEOUT_MS
): Promise<{ accessToken: string, idToken: string | null }> {
  const body = new URLSearchParams({
    client_id: request.clientId,
    client_secret: request.clientSecret,
    code,
    grant_type: 'authorization_code',
    redirect_uri: request.redirectUri,
    code_verifier: codeVerifier
  })
  const answer = await call(request.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': USER_AGENT, ...request.headers },
    body
  }, timeoutMs) as Record<string, unknown>
  // GitHub reports a bad code with 200 and an `error` field.
  if (typeof answer.error === 'string') throw providerError(answer.error)
  if (typeof answer.access_token !== 'string' || answer.access_token === '') throw providerError('no access token in the token response')
  return { accessToken: answer.access_token, idToken: typeof answer.id_token === 'string' ? answer.id_token : null }
}

/** The normalized profile; any failure reading it is the provider's. */
export async function fetchProfile (readProfile: OAuthProvider['readProfile'], userinfoUrl: string, accessToken: string, timeoutMs = PROVIDER_TIMEOUT_MS): Promise<OAuthProfile> {
  try {
    return usableProfile(await readProfile(userinfoUrl, providerGet(timeoutMs), accessToken))
  } catch (error) {
    if (error instanceof Errors.OAUTH_PROVIDER_ERROR) throw error
    throw providerError(error instanceof Error ? error.message : 'unreadable profile')
  }
}
