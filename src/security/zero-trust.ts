import { BlockList, isIP } from 'node:net'
import type { Static } from '@sinclair/typebox'
import type { AccessCheckBody, AccessDecisionSchema, RiskFactor } from '../../schemas/zero-trust.js'

/** The decision as the schema describes it, its four factors a tuple in their order. */
export type AccessDecision = Omit<Static<typeof AccessDecisionSchema>, 'factors'> & {
  /** Device, network, behaviour, timing: in that order. */
  factors: [RiskFactor, RiskFactor, RiskFactor, RiskFactor]
}

/** Allowed only below this score (and with every factor trusted). */
export const ALLOW_BELOW = 50

function subnets (cidrs: readonly string[]): BlockList {
  const list = new BlockList()
  for (const cidr of cidrs) {
    const [address = '', prefix] = cidr.split('/')
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    list.addSubnet(address, prefix === undefined ? (family === 'ipv6' ? 128 : 32) : Number(prefix), family)
  }
  return list
}

/** Private addresses: the private IPv4 ranges, IPv6 unique-local, loopback and link-local. */
const PRIVATE = subnets([
  '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16',
  '127.0.0.0/8', '169.254.0.0/16',
  'fc00::/7', '::1/128', 'fe80::/10'
])

/** IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as the IPv4 address they carry. */
function normalize (ip: string): { address: string, family: 'ipv4' | 'ipv6' } | null {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  const address = mapped?.[1] ?? ip
  const family = isIP(address)
  if (family === 0) return null
  return { address, family: family === 4 ? 'ipv4' : 'ipv6' }
}

export interface ZeroTrustContext {
  /** A compiled TRUSTED_NETWORKS (see `trustedNetworks`). */
  trustedNetworks: BlockList
  /** Whether `device_id` is one of the user's trusted devices. */
  deviceTrusted: boolean
  /** What the anomaly detector found for the user. */
  anomalies: number
}

export function trustedNetworks (cidrs: readonly string[]): BlockList {
  return subnets(cidrs)
}

function deviceFactor (request: AccessCheckBody, trusted: boolean): RiskFactor {
  if (request.device_id === undefined || request.device_id === '') return { trusted: false, risk: 30, reason: 'No device identifier' }
  if (trusted) return { trusted: true, risk: 0, reason: 'Known trusted device' }
  return { trusted: false, risk: 20, reason: 'Unknown device' }
}

function networkFactor (request: AccessCheckBody, trusted: BlockList): RiskFactor {
  const ip = normalize(request.client_ip ?? '')
  if (ip === null) return { trusted: false, risk: 40, reason: 'Invalid client IP address' }
  if (trusted.check(ip.address, ip.family)) return { trusted: true, risk: 0, reason: 'Trusted network' }
  if (PRIVATE.check(ip.address, ip.family)) return { trusted: true, risk: 5, reason: 'Private network' }
  return { trusted: false, risk: 15, reason: 'Public network' }
}

function behaviourFactor (anomalies: number): RiskFactor {
  if (anomalies <= 0) return { trusted: true, risk: 0, reason: 'No anomalies detected' }
  return { trusted: false, risk: Math.min(10 * anomalies, 30), reason: `${anomalies} anomal${anomalies === 1 ? 'y' : 'ies'} detected` }
}

function timingFactor (timestamp: Date): RiskFactor {
  const hour = timestamp.getUTCHours()
  if (hour < 6 || hour > 22) return { trusted: true, risk: 10, reason: 'Access outside usual hours (UTC)' }
  return { trusted: true, risk: 0, reason: 'Access during usual hours (UTC)' }
}

/** A `date-time` string as a Date; a leap second (…:60), which Date refuses, as the second before it. */
function parseTimestamp (text: string): Date {
  return new Date(text.replace(/:60(?=(\.\d+)?(Z|[+-]\d\d:\d\d)$)/i, ':59'))
}

/** Each factor by its table (docs/api.md, "Zero-trust access check"), in order; the score is their sum. */
export function evaluateAccess (request: AccessCheckBody, context: ZeroTrustContext, now = new Date()): AccessDecision {
  const timestamp = request.timestamp === undefined ? now : parseTimestamp(request.timestamp)
  const factors: AccessDecision['factors'] = [
    deviceFactor(request, context.deviceTrusted),
    networkFactor(request, context.trustedNetworks),
    behaviourFactor(context.anomalies),
    timingFactor(timestamp)
  ]
  const riskScore = factors.reduce((sum, factor) => sum + factor.risk, 0)
  return {
    allowed: riskScore < ALLOW_BELOW && factors.every((factor) => factor.trusted), risk_score: riskScore, factors
  }
}
