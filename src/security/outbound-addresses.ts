import { BlockList, isIP } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * Where the service may connect on behalf of a URL someone entered (webhook endpoints, IdP metadata): public
 * unicast addresses, and the networks the operator allowed. Anything else could reach the service's own
 * network or a cloud metadata endpoint (docs/security.md, "Webhooks").
 */
export interface OutboundPolicy {
  /** The setting the allowed networks come from, for messages. */
  readonly setting: string
  /** Its networks, compiled. */
  readonly allowed: BlockList
  /** Whether plain http to a loopback address is acceptable (development receivers). */
  readonly loopbackAllowed: boolean
}

/** Longer than any endpoint anyone needs; bounds what is stored and sent. */
const MAX_URL_LENGTH = 2048

/**
 * An operator's list of networks (`setting`: WEBHOOK_ALLOWED_NETWORKS, SSO_METADATA_ALLOWED_NETWORKS; CIDRs
 * already validated by the config loader); empty: public unicast only.
 */
export function outboundPolicy (cidrs: readonly string[], setting: string): OutboundPolicy {
  const allowed = new BlockList()
  for (const cidr of cidrs) {
    const [address = '', prefix] = cidr.split('/')
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    allowed.addSubnet(address, prefix === undefined ? (family === 'ipv6' ? 128 : 32) : Number(prefix), family)
  }
  return { setting, allowed, loopbackAllowed: allowed.check('127.0.0.1', 'ipv4') || allowed.check('::1', 'ipv6') }
}

/**
 * An IP literal as ipaddr.js sees it, an IPv4-mapped IPv6 address (::ffff:10.0.0.1) as the IPv4
 * address it reaches; null unless both Node and ipaddr.js take it for an address (ipaddr.js also reads
 * forms such as 0x7f.1, which no resolver or URL hands over; Node also takes zone IDs such as %eth-0).
 */
function parse (address: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  if (isIP(address) === 0 || !ipaddr.isValid(address)) return null
  const parsed = ipaddr.parse(address)
  return parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress() ? parsed.toIPv4Address() : parsed
}

const IPV4_COMPATIBLE = ipaddr.IPv6.parse('::')

/**
 * ipaddr.js counts the deprecated IPv4-compatible addresses (::/96, e.g. ::7f00:1) as unicast; they
 * carry an IPv4 address no check here looks at, and no receiver needs them.
 */
function ipv4Compatible (address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return address instanceof ipaddr.IPv6 && address.match(IPV4_COMPATIBLE, 96)
}

/**
 * null when a connection to `address` (an IP literal) is allowed, else why not: the ipaddr.js range
 * name ('private', 'loopback', 'linkLocal', 'uniqueLocal', 'carrierGradeNat', 'reserved', 'unspecified',
 * 'multicast', ...), 'ipv4Compatible', or 'invalid'.
 */
export function addressRefusal (address: string, policy: OutboundPolicy): string | null {
  const parsed = parse(address)
  if (parsed === null) return 'invalid'
  if (policy.allowed.check(parsed.toString(), parsed.kind())) return null
  const range = parsed.range()
  if (range !== 'unicast') return range
  return ipv4Compatible(parsed) ? 'ipv4Compatible' : null
}

/** "a private address", "an unspecified address": a refusal for a message. */
export function refusedAddress (range: string): string {
  return `${/^(?:[aeio]|un[^i]|rfc)/i.test(range) ? 'an' : 'a'} ${range} address`
}

/** A URL's host without the brackets of an IPv6 literal. */
export function bareHost (hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}

function loopbackHost (hostname: string): boolean {
  if (hostname === 'localhost') return true
  return parse(bareHost(hostname))?.range() === 'loopback'
}

/**
 * null when `url` may be a webhook endpoint's URL, else a sentence for a 400 message. An IP literal is
 * judged here; a host name only at send time, since what it resolves to can change.
 */
export function endpointUrlProblem (url: string, policy: OutboundPolicy): string | null {
  if (url.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters long`
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'is not a valid URL'
  }
  const https = parsed.protocol === 'https:'
  const developmentHttp = parsed.protocol === 'http:' && policy.loopbackAllowed && loopbackHost(parsed.hostname)
  if (!https && !developmentHttp) {
    return `must use https (http only to a loopback address when ${policy.setting} allows it)`
  }
  if (parsed.username !== '' || parsed.password !== '') return 'must not contain a user name or password'
  if (url.includes('#')) return 'must not contain a fragment (#)'
  const host = bareHost(parsed.hostname)
  if (isIP(host) !== 0) {
    const refusal = addressRefusal(host, policy)
    if (refusal !== null) return `points to ${refusedAddress(refusal)}, which ${policy.setting} does not allow`
  }
  return null
}
