import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose'
import { isHttpUrl } from '../config/index.js'
import { fetchJson, providerError, PROVIDER_TIMEOUT_MS, type ProviderTransport } from './client.js'

/** What the service uses of an issuer's discovery document (docs/api.md, "Providers by issuer"). */
export interface IssuerMetadata {
  issuer: string
  authorizationEndpoint: string
  tokenEndpoint: string
  userinfoEndpoint: string | null
  /**
   * The provider adds `iss` to every authorization response, so
   * a response without it is refused (docs/api.md, "Callback").
   */
  issParameterSupported: boolean
}

/** A discovery document is read again after this long; until then it is served from memory. */
export const METADATA_MAX_AGE_MS = 60 * 60 * 1000

/** A discovery document's address member, when it is an http(s) URL the issuer's rule admits. */
function httpUrl (value: unknown, admitted: (url: string) => boolean): string | null {
  return typeof value === 'string' && isHttpUrl(value) && admitted(value) ? value : null
}

/**
 * The document's fields, checked: its `issuer` must be the configured one exactly, or another
 * issuer could be put in its place (docs/security.md, "Provider sign-in").
 */
function readMetadata (
  issuer: string, document: unknown, admitted: (url: string) => boolean
): IssuerMetadata & { jwksUri: string } {
  const fields = (typeof document === 'object' && document !== null ? document : {}) as Record<string, unknown>
  if (fields.issuer !== issuer) throw providerError('the discovery document names another issuer')
  const authorizationEndpoint = httpUrl(fields.authorization_endpoint, admitted)
  const tokenEndpoint = httpUrl(fields.token_endpoint, admitted)
  const jwksUri = httpUrl(fields.jwks_uri, admitted)
  if (authorizationEndpoint === null || tokenEndpoint === null || jwksUri === null) {
    throw providerError('the discovery document lacks an authorization, token or JWKS URL the service may reach')
  }
  return {
    issuer,
    authorizationEndpoint,
    tokenEndpoint,
    jwksUri,
    userinfoEndpoint: httpUrl(fields.userinfo_endpoint, admitted),
    issParameterSupported: fields.authorization_response_iss_parameter_supported === true
  }
}

/** jose's fetch of a JWKS, through a provider transport (its timeout and answer limit). */
function jwksFetch (transport: ProviderTransport): (url: string, options: { headers: Headers }) => Promise<Response> {
  return async (url, options) => {
    const { status, text } = await transport({ method: 'GET', url, headers: Object.fromEntries(options.headers) })
    return new Response(text, { status })
  }
}

export interface OidcIssuerOptions {
  transport: ProviderTransport
  timeoutMs?: number
  maxAgeMs?: number
  /**
   * Which endpoints the document may name (an issuer an organization's owner entered: the
   * outbound rule's); any http(s) URL by default.
   */
  endpointAdmitted?: (url: string) => boolean
}

/**
 * An OpenID provider known by its issuer (docs/api.md, "Providers by issuer"): its discovery
 * document, read on first use and again once an hour, and its signing keys (jose fetches the
 * JWKS again when a token names a key it has not seen, so the provider may rotate keys). A
 * document that cannot be read is the provider's error (502); one read before keeps serving
 * until a later read succeeds.
 */
export class OidcIssuer {
  #current: { metadata: IssuerMetadata, keys: JWTVerifyGetKey, readAt: number } | null = null
  #reading: Promise<{ metadata: IssuerMetadata, keys: JWTVerifyGetKey }> | null = null
  #jwksUri: string | null = null

  readonly #options: Required<OidcIssuerOptions>

  constructor (readonly issuer: string, options: OidcIssuerOptions) {
    this.#options = {
      timeoutMs: PROVIDER_TIMEOUT_MS, maxAgeMs: METADATA_MAX_AGE_MS, endpointAdmitted: () => true, ...options
    }
  }

  async discover (): Promise<{ metadata: IssuerMetadata, keys: JWTVerifyGetKey }> {
    const current = this.#current
    if (current !== null && Date.now() - current.readAt < this.#options.maxAgeMs) return current
    // Concurrent requests share one read.
    this.#reading ??= this.#read().finally(() => { this.#reading = null })
    try {
      return await this.#reading
    } catch (error) {
      if (current !== null) return current
      throw error
    }
  }

  async #read (): Promise<{ metadata: IssuerMetadata, keys: JWTVerifyGetKey }> {
    const url = `${this.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`
    const { transport, timeoutMs, endpointAdmitted } = this.#options
    const { jwksUri, ...metadata } = readMetadata(this.issuer, await fetchJson(url, transport), endpointAdmitted)
    const previous = this.#current
    const keys = previous !== null && this.#jwksUri === jwksUri
      ? previous.keys
      : createRemoteJWKSet(new URL(jwksUri), { timeoutDuration: timeoutMs, [customFetch]: jwksFetch(transport) })
    this.#jwksUri = jwksUri
    this.#current = { metadata, keys, readAt: Date.now() }
    return this.#current
  }
}
