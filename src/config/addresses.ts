import { isIP } from 'node:net'
import { list } from './environment.js'

/**
 * The addresses variables hold: networks, URLs, the database's, the trusted proxies
 * (docs/operations.md, "Proxies and client addresses") and the passkey origins.
 */

export type DatabaseConfig =
  | { dialect: 'sqlite', url: string, path: string }
  | { dialect: 'postgres', url: string }

/** `a.b.c.d/n` or `x::y/n`; a bare address counts as a single-host network. */
export function isCidr (value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  if (!/^[0-9]{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (family === 4 ? 32 : 128)
}

export function parseDatabaseUrl (url: string): DatabaseConfig {
  if (url.startsWith('sqlite://')) return { dialect: 'sqlite', url, path: url.slice('sqlite://'.length) }
  return { dialect: 'postgres', url }
}

/** Whether `value` parses as an absolute URI (a scheme, then anything the URL parser accepts). */
export function isUri (value: string): boolean {
  return URL.canParse(value)
}

/** An http(s) URL. */
export function isHttpUrl (value: string): boolean {
  try {
    const { protocol } = new URL(value)
    return protocol === 'http:' || protocol === 'https:'
  } catch {
    return false
  }
}

/** An http(s) URL without query or fragment: one that other addresses can be built on. */
export function isHttpBase (value: string): boolean {
  return isHttpUrl(value) && !/[?#]/.test(value)
}

/** TRUST_PROXY as Fastify's `trustProxy`: false, true (any proxy), or the proxies' addresses/CIDRs. */
export function readTrustProxy (value: string, problems: string[], warnings: string[]): boolean | string[] {
  if (value === 'false') return false
  if (value === 'true') {
    warnings.push('TRUST_PROXY=true trusts any X-Forwarded-For, which clients can forge; list your proxies instead')
    return true
  }
  const proxies = list(value)
  const bad = proxies.filter((proxy) => !isCidr(proxy))
  if (bad.length > 0 || proxies.length === 0) {
    problems.push(`TRUST_PROXY must be true, false or a comma-separated list of addresses/CIDRs (got "${value}")`)
  }
  return proxies
}

/**
 * Passkey origins: each an http(s) origin (no path) on the relying-party id or one of its
 * subdomains, since browsers refuse a ceremony for an RP ID the page's host is not within.
 */
export function readWebauthnOrigins (value: string, rpId: string, problems: string[]): string[] {
  const origins = list(value)
  if (origins.length === 0) problems.push('WEBAUTHN_ORIGINS must list at least one origin')
  for (const origin of origins) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
      problems.push(`WEBAUTHN_ORIGINS has an entry that is not an origin like https://example.com: ${origin}`)
    } else if (parsed.hostname !== rpId && !parsed.hostname.endsWith(`.${rpId}`)) {
      problems.push(`WEBAUTHN_ORIGINS has an origin outside WEBAUTHN_RP_ID ${rpId}: ${origin}`)
    }
  }
  return origins
}
