import t from 'tap'
import { RevocationList } from '../../src/security/revocation-list.js'

t.test('pruning drops the entries whose tokens have expired, and only those', async (t) => {
  const list = new RevocationList()
  list.add('expired', 1_000, 0)
  list.add('expiring-now', 2_000, 0)
  list.add('live', 3_000, 0)
  t.ok(list.has('expired'), 'held until pruned')
  list.prune(2_000)
  t.notOk(list.has('expired'))
  t.notOk(list.has('expiring-now'), 'a token is dead at its expiry instant')
  t.ok(list.has('live'))
})
