import t from 'tap'
import { evaluateAccess, trustedNetworks, type ZeroTrustContext } from '../../src/security/zero-trust.js'

const defaults = trustedNetworks(['192.168.1.0/24', '10.0.0.0/8', '172.16.0.0/12'])
const context = (overrides: Partial<ZeroTrustContext> = {}): ZeroTrustContext =>
  ({ trustedNetworks: defaults, deviceTrusted: false, anomalies: 0, ...overrides })
const noon = '2026-11-22T12:00:00Z'

t.test('device factor', async (t) => {
  t.same(evaluateAccess({ timestamp: noon }, context()).factors[0], { trusted: false, risk: 30, reason: 'No device identifier' })
  t.same(evaluateAccess({ device_id: '', timestamp: noon }, context()).factors[0].risk, 30, 'empty counts as none')
  t.same(evaluateAccess({ device_id: 'd', timestamp: noon }, context({ deviceTrusted: true })).factors[0], { trusted: true, risk: 0, reason: 'Known trusted device' })
  t.same(evaluateAccess({ device_id: 'd', timestamp: noon }, context()).factors[0], { trusted: false, risk: 20, reason: 'Unknown device' })
})

t.test('network factor, IPv4 and IPv6, at the edges of each range', async (t) => {
  const network = (ip: string | undefined, ctx = context()) => {
    const factor = evaluateAccess({ ...(ip !== undefined && { client_ip: ip }), timestamp: noon }, ctx).factors[1]
    return [factor.trusted, factor.risk]
  }
  for (const ip of [undefined, '', 'not-an-ip', '256.0.0.1', '10.0.0', '1.2.3.4/32']) t.same(network(ip), [false, 40], `invalid: ${String(ip)}`)
  for (const ip of ['10.0.0.0', '10.255.255.255', '172.16.0.0', '172.31.255.255', '192.168.1.0', '192.168.1.255', '::ffff:10.1.2.3']) {
    t.same(network(ip), [true, 0], `trusted: ${ip}`)
  }
  for (const ip of ['192.168.0.255', '192.168.2.0', '127.0.0.1', '169.254.1.1', '::1', 'fc00::1', 'fdff:ffff::1', 'fe80::1', 'febf::1']) {
    t.same(network(ip), [true, 5], `private: ${ip}`)
  }
  for (const ip of ['172.15.255.255', '172.32.0.0', '11.0.0.0', '9.255.255.255', '8.8.8.8', '2001:db8::1', 'fec0::1', 'fe00::1']) {
    t.same(network(ip), [false, 15], `public: ${ip}`)
  }
  const v6 = context({ trustedNetworks: trustedNetworks(['2001:db8::/32', '203.0.113.7']) })
  t.same(network('2001:db8:ffff::1', v6), [true, 0], 'IPv6 trusted network')
  t.same(network('2001:db9::1', v6), [false, 15])
  t.same(network('203.0.113.7', v6), [true, 0], 'a bare address is a single-host network')
  t.same(network('203.0.113.8', v6), [false, 15])
})

t.test('behaviour factor: 10 per anomaly, at most 30', async (t) => {
  const behaviour = (anomalies: number) => evaluateAccess({ timestamp: noon }, context({ anomalies })).factors[2]
  t.same(behaviour(0), { trusted: true, risk: 0, reason: 'No anomalies detected' })
  t.same([behaviour(1).trusted, behaviour(1).risk], [false, 10])
  t.same(behaviour(2).risk, 20)
  t.same(behaviour(3).risk, 30)
  t.same(behaviour(7).risk, 30)
})

t.test('timing factor: UTC hour before 6 or after 22 adds 10, still trusted', async (t) => {
  const timing = (timestamp: string) => evaluateAccess({ timestamp }, context()).factors[3]
  t.same(timing('2026-11-22T05:59:59Z'), { trusted: true, risk: 10, reason: 'Access outside usual hours (UTC)' })
  t.same(timing('2026-11-22T06:00:00Z').risk, 0)
  t.same(timing('2026-11-22T22:59:59Z').risk, 0)
  t.same(timing('2026-11-22T23:00:00Z').risk, 10)
  t.same(timing('2026-11-22T23:30:00+02:00').risk, 0, 'the hour is taken in UTC (21:30)')
  t.same(evaluateAccess({}, context(), new Date('2026-11-22T03:00:00Z')).factors[3].risk, 10, 'timestamp defaults to now')
  t.same(timing('2016-12-31T23:59:60Z').risk, 10, 'a leap second counts in its hour (23)')
  t.same(timing('2016-12-31T23:59:60.5+00:00').risk, 10, 'with fractions and an offset too')
  t.same(timing('2015-06-30T23:59:60-07:00').risk, 0, 'an offset leap second: 06:59:59 UTC on July 1st, usual hours')
})

t.test('score is the sum; allowed needs < 50 and every factor trusted', async (t) => {
  const best = evaluateAccess({ device_id: 'd', client_ip: '10.1.1.1', timestamp: noon }, context({ deviceTrusted: true }))
  t.same(best, {
    allowed: true,
    risk_score: 0,
    factors: [
      { trusted: true, risk: 0, reason: 'Known trusted device' },
      { trusted: true, risk: 0, reason: 'Trusted network' },
      { trusted: true, risk: 0, reason: 'No anomalies detected' },
      { trusted: true, risk: 0, reason: 'Access during usual hours (UTC)' }
    ]
  })
  const night = evaluateAccess({ device_id: 'd', client_ip: '127.0.0.1', timestamp: '2026-11-22T02:00:00Z' }, context({ deviceTrusted: true }))
  t.same([night.risk_score, night.allowed], [15, true], 'private network at night: trusted factors, low score')
  const untrusted = evaluateAccess({ device_id: 'd', client_ip: '10.1.1.1', timestamp: noon }, context())
  t.same([untrusted.risk_score, untrusted.allowed], [20, false], 'a low score with an untrusted factor is refused')
  const worst = evaluateAccess({ timestamp: '2026-11-22T23:00:00Z' }, context({ anomalies: 5 }))
  t.same([worst.risk_score, worst.allowed], [110, false])
})
