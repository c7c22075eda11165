import t from 'tap'
import { canonicalUuid } from '../src/store/ids.js'

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
