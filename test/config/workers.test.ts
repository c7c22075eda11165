import { availableParallelism } from 'node:os'
import t from 'tap'
import { workerCount } from '../../src/config/index.js'

t.test('WORKERS: a positive integer, one per core when unset, a bad value named', async (t) => {
  t.equal(workerCount({ WORKERS: '3' }), 3)
  t.equal(workerCount({}), availableParallelism())
  t.equal(workerCount({ WORKERS: '' }), availableParallelism())
  for (const bad of ['0', '-1', 'two', '1.5', '1000']) {
    t.throws(() => workerCount({ WORKERS: bad }), { message: `WORKERS must be a positive integer (got "${bad}")` })
  }
})
