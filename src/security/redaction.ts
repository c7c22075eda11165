/**
 * Redaction (docs/api.md, "Redaction"): any key containing one of these words, in any case
 * and at any depth (arrays included), has its value replaced. Used for audit entries and logs.
 * Besides credentials: one-time passwords (`otp`, `totp`), session ids and CSRF tokens, which
 * let whoever reads them act as the user.
 */
const SENSITIVE_KEY = /password|token|secret|key|authorization|cookie|otp|session|csrf/i
/**
 * The OAuth and OpenID parameters that are secrets in flight: the authorization code, the
 * state and nonce binding a flow to the browser that started it, the PKCE verifier. They are
 * common words, so they count as a whole name or a word of one (`oauth_state`,
 * `code_verifier`, `x-oauth-code`), not inside another word (`postcode`, `statement`).
 */
const OAUTH_SECRET = /(?:^|[^a-z0-9])(?:code|state|nonce|verifier)(?:$|[^a-z0-9])/i
export const REDACTED = '[REDACTED]'
/** What replaces an erased account's address in its audit entries. */
export const ERASED = '[erased]'
const MAX_DEPTH = 32

export function isSensitiveKey (key: string): boolean {
  return SENSITIVE_KEY.test(key) || OAUTH_SECRET.test(key)
}

/** A redacted deep copy; cycles and excessive depth are cut rather than followed. */
export function redact (value: unknown): unknown {
  return redactAt(value, new WeakSet(), 0)
}

function redactAt (value: unknown, seen: WeakSet<object>, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (depth >= MAX_DEPTH) return '[Truncated]'
  if (seen.has(value)) return '[Circular]'
  seen.add(value)
  let copy: unknown
  if (Array.isArray(value)) {
    copy = value.map((item) => redactAt(item, seen, depth + 1))
  } else if (value instanceof Date) {
    copy = value.toISOString()
  } else {
    const entries: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      entries[key] = isSensitiveKey(key) ? REDACTED : redactAt(item, seen, depth + 1)
    }
    copy = entries
  }
  seen.delete(value)
  return copy
}

/**
 * `value` with every string that holds `address` (compared case-insensitively) replaced: the
 * audit entries of an erased account keep what happened, not its address.
 */
export function withoutAddress (value: unknown, address: string): unknown {
  const needle = address.toLowerCase()
  const scrub = (item: unknown, depth: number): unknown => {
    if (typeof item === 'string') return item.toLowerCase().includes(needle) ? ERASED : item
    if (typeof item !== 'object' || item === null || depth >= MAX_DEPTH) return item
    if (Array.isArray(item)) return item.map((entry) => scrub(entry, depth + 1))
    return Object.fromEntries(Object.entries(item).map(([key, entry]) => [key, scrub(entry, depth + 1)]))
  }
  return scrub(value, 0)
}

/**
 * A webhook delivery's body once its account is erased: the address nowhere in it, and, when it
 * carries an audit entry (`audit.entry`), the client address and user agent gone, as they are
 * from the entry itself.
 */
export function erasedPayload (payload: string, address: string): string {
  const body = withoutAddress(JSON.parse(payload), address) as { type?: string, data?: Record<string, unknown> }
  if (body.type === 'audit.entry' && body.data !== undefined) body.data = { ...body.data, ip: null, user_agent: null }
  return JSON.stringify(body)
}

/** A header value with a query string in it, its sensitive parameters redacted. */
const redactQueryIn = (value: string): string => value.includes('?') ? redactUrl(value) : value

/**
 * Request headers, redacted: a flat object of strings (or string arrays), so one pass over
 * the names does what `redact` does, without its copy-and-recurse cost on every log line.
 * Values with a query string (Referer, X-Original-URL, …) have its sensitive parameters redacted.
 */
export function redactHeaders (
  headers: Record<string, string | string[] | undefined>
): Record<string, string | string[] | undefined> {
  const copy: Record<string, string | string[] | undefined> = {}
  for (const name of Object.keys(headers)) {
    const value = headers[name]
    copy[name] = isSensitiveKey(name)
      ? REDACTED
      : typeof value === 'string' ? redactQueryIn(value) : value?.map(redactQueryIn)
  }
  return copy
}

/** The URL with the values of sensitive query parameters replaced. */
export function redactUrl (url: string): string {
  const query = url.indexOf('?')
  if (query === -1) return url
  const params = url.slice(query + 1).split('&').map((pair) => {
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    let decoded = name
    try {
      decoded = decodeURIComponent(name)
    } catch {
      // A malformed name is checked as it stands.
    }
    return equals !== -1 && isSensitiveKey(decoded) ? `${name}=${REDACTED}` : pair
  })
  return `${url.slice(0, query)}?${params.join('&')}`
}
