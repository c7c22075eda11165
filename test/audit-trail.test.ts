import t from 'tap'
import { AuditTrail } from '../src/services/audit-trail.js'
import type { AuditLogsTable } from '../src/store/types.js'

/** A storage whose writes finish only when the test says so. */
function heldStorage () {
  const written: string[][] = []
  const held: Array<{ release: () => void, fail: (error: Error) => void }> = []
  const write = async (rows: AuditLogsTable[]): Promise<void> => {
    await new Promise<void>((resolve, reject) => { held.push({ release: resolve, fail: reject }) })
    written.push(rows.map((row) => row.target_id ?? ''))
  }
  const settle = (index: number) => {
    const write = held[index]
    if (write === undefined) throw new Error(`no write ${index} in flight`)
    return write
  }
  return { written, held, write, settle }
}

const until = async (condition: () => boolean): Promise<void> => {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve))
}

t.test('flush writes what was queued while another write was in flight', async (t) => {
  const storage = heldStorage()
  const trail = new AuditTrail({ write: storage.write, onError: (error) => { throw error }, flushIntervalMs: 60_000 })
  t.teardown(async () => { await trail.close() })

  trail.record({ event: 'user.created', outcome: 'success', targetId: 'a' })
  const first = trail.flush()
  trail.record({ event: 'user.created', outcome: 'success', targetId: 'b' })
  let secondDone = false
  const second = trail.flush().then(() => { secondDone = true })

  storage.settle(0).release()
  await first
  await until(() => storage.held.length === 2)
  t.notOk(secondDone, 'the second flush waits for what was queued after the first write began')
  storage.settle(1).release()
  await second
  t.same(storage.written, [['a'], ['b']], 'both entries written, in order, each once')
})

t.test('a failed write keeps its entries, and the next flush writes them with the newer ones', async (t) => {
  const storage = heldStorage()
  const errors: number[] = []
  const trail = new AuditTrail({ write: storage.write, onError: (_error, pending) => { errors.push(pending) }, flushIntervalMs: 60_000 })
  t.teardown(async () => { await trail.close() })

  trail.record({ event: 'user.created', outcome: 'success', targetId: 'a' })
  const first = trail.flush()
  trail.record({ event: 'user.created', outcome: 'success', targetId: 'b' })
  const second = trail.flush()

  storage.settle(0).fail(new Error('storage down'))
  await first
  t.same(errors, [2], 'the failure is reported with both entries waiting')
  await until(() => storage.held.length === 2)
  storage.settle(1).release()
  await second
  t.same(storage.written, [['a', 'b']], 'the retry writes the failed entry before the newer one')
})

t.test('flushes during a write share one follow-up write, even when both fail', async (t) => {
  const storage = heldStorage()
  let failures = 0
  const trail = new AuditTrail({ write: storage.write, onError: () => { failures++ }, flushIntervalMs: 60_000 })
  t.teardown(async () => { await trail.close() })

  trail.record({ event: 'user.created', outcome: 'success', targetId: 'a' })
  const first = trail.flush()
  trail.record({ event: 'user.created', outcome: 'success', targetId: 'b' })
  const during = [trail.flush(), trail.flush(), trail.flush()]
  storage.settle(0).fail(new Error('storage down'))
  await first
  await until(() => storage.held.length === 2)
  storage.settle(1).fail(new Error('still down'))
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve))
  t.equal(storage.held.length, 2, 'three callers, one follow-up write: no retry per caller')
  t.equal(failures, 2)
  for (const write of storage.held.slice(2)) write.release()
  await Promise.all(during)
  trail.record({ event: 'user.created', outcome: 'success', targetId: 'c' })
  const last = trail.flush()
  storage.settle(2).release()
  await last
  t.same(storage.written, [['a', 'b', 'c']], 'what failed is kept and written with the newer entry')
})
