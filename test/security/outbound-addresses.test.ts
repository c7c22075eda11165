import t from 'tap'
import { addressRefusal, endpointUrlProblem, outboundPolicy, refusedAddress, type OutboundPolicy } from '../../src/security/outbound-addresses.js'

const PUBLIC_ONLY = outboundPolicy([], 'WEBHOOK_ALLOWED_NETWORKS')

t.test('addressRefusal: public unicast allowed', async (t) => {
  for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8', '::ffff:93.184.216.34']) {
    t.equal(addressRefusal(address, PUBLIC_ONLY), null, address)
  }
})

t.test('addressRefusal: every other range refused, by its name', async (t) => {
  const refused: Array<[string, string]> = [
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.254', 'private'],
    ['192.168.0.1', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.10.20.30', 'loopback'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'linkLocal'],
    ['fd00::1', 'uniqueLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'linkLocal'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2002:a00:1::1', '6to4'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['::7f00:1', 'ipv4Compatible']
  ]
  for (const [address, range] of refused) t.equal(addressRefusal(address, PUBLIC_ONLY), range, address)
})

t.test('addressRefusal: anything but an IP literal is invalid', async (t) => {
  for (const address of ['', 'example.com', '0x7f.1', '2130706433', '10.0.0.256', '[::1]', 'fe80::1%eth-0']) {
    t.equal(addressRefusal(address, PUBLIC_ONLY), 'invalid', address)
  }
})

t.test('addressRefusal: the operator\'s networks are allowed, and only those', async (t) => {
  const policy = outboundPolicy(['10.0.0.0/8', 'fd00:1::/32', '192.168.5.5'], 'WEBHOOK_ALLOWED_NETWORKS')
  t.equal(addressRefusal('10.1.2.3', policy), null)
  t.equal(addressRefusal('::ffff:10.1.2.3', policy), null, 'mapped IPv4 judged as IPv4')
  t.equal(addressRefusal('fd00:1:2::3', policy), null)
  t.equal(addressRefusal('192.168.5.5', policy), null, 'a bare address is a /32')
  t.equal(addressRefusal('192.168.5.6', policy), 'private')
  t.equal(addressRefusal('192.168.0.1', policy), 'private')
  t.equal(addressRefusal('fd00:2::1', policy), 'uniqueLocal')
  t.equal(addressRefusal('127.0.0.1', policy), 'loopback')
  t.equal(addressRefusal('93.184.216.34', policy), null, 'public addresses stay allowed')
})

t.test('outboundPolicy: loopback allowed only when the list holds 127.0.0.1 or ::1', async (t) => {
  t.equal(PUBLIC_ONLY.loopbackAllowed, false)
  t.equal(outboundPolicy(['10.0.0.0/8'], 'WEBHOOK_ALLOWED_NETWORKS').loopbackAllowed, false)
  t.equal(outboundPolicy(['127.0.0.0/8'], 'WEBHOOK_ALLOWED_NETWORKS').loopbackAllowed, true)
  t.equal(outboundPolicy(['127.0.0.1'], 'WEBHOOK_ALLOWED_NETWORKS').loopbackAllowed, true)
  t.equal(outboundPolicy(['::1'], 'WEBHOOK_ALLOWED_NETWORKS').loopbackAllowed, true)
  t.equal(outboundPolicy(['::1/128'], 'WEBHOOK_ALLOWED_NETWORKS').loopbackAllowed, true)
})

t.test('refusedAddress: the article fits the range', async (t) => {
  t.equal(refusedAddress('private'), 'a private address')
  t.equal(refusedAddress('unspecified'), 'an unspecified address')
  t.equal(refusedAddress('uniqueLocal'), 'a uniqueLocal address')
  t.equal(refusedAddress('invalid'), 'an invalid address')
})

t.test('endpointUrlProblem', async (t) => {
  const loopback = outboundPolicy(['127.0.0.0/8'], 'WEBHOOK_ALLOWED_NETWORKS')
  const named = new Map([[PUBLIC_ONLY, 'public only'], [loopback, 'allowing 127.0.0.0/8']])
  const cases: Array<[string, OutboundPolicy, RegExp | null]> = [
    ['https://hooks.example.com/receive?x=1', PUBLIC_ONLY, null],
    ['https://93.184.216.34:8443/hook', PUBLIC_ONLY, null],
    ['https://[2606:2800:220:1:248:1893:25c8:1946]/hook', PUBLIC_ONLY, null],
    ['http://hooks.example.com/receive', PUBLIC_ONLY, /^must use https/],
    ['http://hooks.example.com/receive', loopback, /^must use https/],
    ['http://127.0.0.1:3000/hook', PUBLIC_ONLY, /^must use https/],
    ['http://127.0.0.1:3000/hook', loopback, null],
    ['http://localhost:3000/hook', PUBLIC_ONLY, /^must use https/],
    ['http://localhost:3000/hook', loopback, null],
    ['http://[::1]:3000/hook', outboundPolicy(['::1'], 'WEBHOOK_ALLOWED_NETWORKS'), null],
    ['http://[::1]:3000/hook', PUBLIC_ONLY, /^must use https/],
    ['https://127.0.0.1/hook', PUBLIC_ONLY, /^points to a loopback address, which WEBHOOK_ALLOWED_NETWORKS does not allow$/],
    ['https://169.254.169.254/', PUBLIC_ONLY, /^points to a linkLocal address/],
    ['https://169.254.169.254/', loopback, /^points to a linkLocal address/],
    ['https://10.0.0.7/hook', PUBLIC_ONLY, /^points to a private address/],
    ['https://10.0.0.7/hook', outboundPolicy(['10.0.0.0/8'], 'WEBHOOK_ALLOWED_NETWORKS'), null],
    ['https://[::ffff:a9fe:a9fe]/', PUBLIC_ONLY, /^points to a linkLocal address/],
    ['https://[fd00::1]/', PUBLIC_ONLY, /^points to a uniqueLocal address/],
    ['https://0.0.0.0/', PUBLIC_ONLY, /^points to an unspecified address/],
    ['https://2130706433/', PUBLIC_ONLY, /^points to a loopback address/],
    ['https://user:pw@example.com/hook', PUBLIC_ONLY, /user name or password/],
    ['https://user@example.com/hook', PUBLIC_ONLY, /user name or password/],
    ['https://example.com/hook#part', PUBLIC_ONLY, /fragment/],
    ['https://example.com/hook#', PUBLIC_ONLY, /fragment/],
    ['not a url', PUBLIC_ONLY, /^is not a valid URL$/],
    ['', PUBLIC_ONLY, /^is not a valid URL$/],
    ['ftp://example.com/hook', PUBLIC_ONLY, /^must use https/],
    ['file:///etc/passwd', loopback, /^must use https/],
    [`https://example.com/${'a'.repeat(2048)}`, PUBLIC_ONLY, /2048/]
  ]
  for (const [url, policy, problem] of cases) {
    const found = endpointUrlProblem(url, policy)
    const name = `${url.slice(0, 60)} (${named.get(policy) ?? 'a narrower list'})`
    if (problem === null) t.equal(found, null, name)
    else t.match(found, problem, name)
  }
  t.equal(endpointUrlProblem(`https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`, PUBLIC_ONLY), null, '2048 characters are fine')
})
