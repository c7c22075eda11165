/**
 * Cross-origin access from CORS_ORIGINS only, every origin when unset (docs/api.md, "CORS").
 * Bearer tokens, not cookies: no credentials. The header sets are built once; a request
 * without Origin (not cross-origin: servers, curl, load balancers) needs only
 * `Vary: Origin`, so that a cache never serves it to a browser for another origin.
 */
const METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE'
const ALLOWED_HEADERS = 'Authorization, Content-Type, X-Device-Id'
/** Response headers a browser script may read besides the CORS-safelisted ones. */
const EXPOSED_HEADERS = 'Location, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset'
/** Seconds a browser may reuse a preflight's answer. */
const PREFLIGHT_MAX_AGE = '600'

export type HeaderSet = Readonly<Record<string, string>>

export const VARY_ORIGIN: HeaderSet = Object.freeze({ vary: 'Origin' })

export class CorsPolicy {
  readonly #origins: ReadonlySet<string> | null

  /** `origins`: the allow-list; null allows every origin. */
  constructor (origins: readonly string[] | null) {
    this.#origins = origins === null ? null : new Set(origins)
  }

  allows (origin: string): boolean {
    return this.#origins === null || this.#origins.has(origin)
  }

  /**
   * Headers for an actual (non-preflight) request from `origin`: the allowed origin is
   * echoed (never `*`, so the answer is right for one origin only, hence Vary).
   */
  responseHeaders (origin: string): HeaderSet {
    if (!this.allows(origin)) return VARY_ORIGIN
    return { vary: 'Origin', 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSED_HEADERS }
  }

  /** Headers answering a preflight from `origin`; a refused origin learns nothing beyond Vary. */
  preflightHeaders (origin: string): HeaderSet {
    if (!this.allows(origin)) return VARY_ORIGIN
    return {
      vary: 'Origin',
      'access-control-allow-origin': origin,
      'access-control-allow-methods': METHODS,
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': PREFLIGHT_MAX_AGE
    }
  }
}

/** A CORS preflight, for a request that has an Origin: OPTIONS naming the method the browser is about to send. */
export function isPreflight (method: string, requestedMethod: string | undefined): boolean {
  return method === 'OPTIONS' && requestedMethod !== undefined
}
