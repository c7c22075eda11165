import t from 'tap'
import { SecretBox } from '../../src/security/secret-box.js'

const [first, second, third] = ['a'.repeat(32), 'b'.repeat(32), 'c'.repeat(32)]

t.test('a key ring: the first key seals, every key opens, another purpose or key does not', async (t) => {
  const former = new SecretBox(second, 'purpose').seal('kept secret')
  const ring = new SecretBox([first, second], 'purpose')
  t.equal(ring.open(former), 'kept secret', 'a former key still opens what it sealed')
  const sealed = ring.seal('new secret')
  t.equal(new SecretBox(first, 'purpose').open(sealed), 'new secret', 'sealed under the first key')
  t.equal(new SecretBox(second, 'purpose').open(sealed), null, 'not under the second')
  t.equal(new SecretBox([third], 'purpose').open(former), null, 'a ring without the key opens nothing')
  t.equal(new SecretBox([first, second], 'other purpose').open(former), null, 'each purpose has keys of its own')
  t.throws(() => new SecretBox([], 'purpose'), 'a ring needs a key')
})

t.test('resealed: under the first key, the same box when it already is, null when no key opens it', async (t) => {
  const ring = new SecretBox([first, second], 'purpose')
  const current = ring.seal('current')
  t.equal(ring.resealed(current), current, 'already under the first key: unchanged')
  const moved = ring.resealed(new SecretBox(second, 'purpose').seal('former'))
  t.not(moved, null)
  t.equal(new SecretBox(first, 'purpose').open(moved ?? ''), 'former', 'sealed again under the first key')
  t.equal(ring.resealed(new SecretBox(third, 'purpose').seal('lost')), null)
  t.equal(ring.resealed('v1.not.a.box'), null)
})
