import t from 'tap'
import { canonicalUuid, uuidv7 } from '../../src/store/ids.js'

t.test('a UUID in any letter case, bare or as a URN, becomes lower case and bare', async (t) => {
  const id = '0189a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b'
  t.equal(canonicalUuid(id), id)
  t.equal(canonicalUuid(id.toUpperCase()), id)
  t.equal(canonicalUuid(`urn:uuid:${id}`), id)
  t.equal(canonicalUuid(`URN:UUID:${id.toUpperCase()}`), id)
})

t.test('anything that is not a UUID is left as it is', async (t) => {
  for (const text of ['', 'not-a-uuid', 'ABC', 'urn:uuid:', '0189A6B2-7C3D-7E4F-8A9B-0C1D2E3F4A5B0', ' 0189a6b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b']) {
    t.equal(canonicalUuid(text), text, JSON.stringify(text))
  }
})

t.test('ids made in one millisecond sort in the order they were made, as version 7 UUIDs', async (t) => {
  const made = Array.from({ length: 1000 }, () => uuidv7(1_700_000_000_000))
  t.same([...made].sort(), made)
  t.equal(new Set(made).size, made.length, 'all different')
  for (const id of made) t.match(id, /^018bcfe5-6800-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  const later = uuidv7(1_700_000_000_001)
  t.ok(later > (made.at(-1) ?? ''), 'a later millisecond sorts after')
  t.ok(uuidv7(1_700_000_000_001) > later, 'and ids of that millisecond go on from there')
})
