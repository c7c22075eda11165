import t from 'tap'
import { addressKey } from '../../src/security/network.js'
import { FAILURES_PER_ACCOUNT, FAILURES_PER_ADDRESS, lockoutScope } from '../../src/security/lockout.js'

t.test('addressKey: IPv4 as is, IPv6 by /64, mapped IPv4 unwrapped', async (t) => {
  t.equal(addressKey('203.0.113.9'), '203.0.113.9')
  t.equal(addressKey('2001:db8:1:2::5'), '2001:db8:1:2::/64')
  t.equal(addressKey('2001:0db8:0001:0002:ffff:1:2:3'), '2001:db8:1:2::/64')
  t.equal(addressKey('::1'), '0:0:0:0::/64')
  t.equal(addressKey('fe80::1'), 'fe80:0:0:0::/64')
  t.equal(addressKey('::ffff:198.51.100.4'), '198.51.100.4')
  t.equal(addressKey('not-an-ip'), 'not-an-ip')
})

t.test('lockoutScope: per address at 5, per account at 20', async (t) => {
  t.equal(FAILURES_PER_ADDRESS, 5)
  t.equal(lockoutScope({ fromAddress: 4, total: 4 }), null)
  t.equal(lockoutScope({ fromAddress: 5, total: 5 }), 'address')
  t.equal(lockoutScope({ fromAddress: 4, total: 19 }), null)
  t.equal(lockoutScope({ fromAddress: 1, total: FAILURES_PER_ACCOUNT }), 'account')
  t.ok(FAILURES_PER_ACCOUNT / FAILURES_PER_ADDRESS >= 4, 'locking an account everywhere takes several addresses')
})
