import t from 'tap'
import { AuditTrail, type AuditTrailOptions } from '../../../src/services/audit/trail.js'
import type { AuditLogsTable } from '../../../src/store/types.js'
import type { TestContext } from '../../helpers/context.js'

interface HeldWrite { release: () => void, fail: (error: Error) => void }

/** A storage whose writes finish only when the test says so. */
function heldStorage () {
  const written: string[][] = []
  const held: HeldWrite[] = []
  const waiting = new Map<number, (write: HeldWrite) => void>()
  const write = async (rows: AuditLogsTable[]): Promise<void> => {
    await new Promise<void>((resolve, reject) => {
      const heldWrite = { release: resolve, fail: reject }
      waiting.get(held.length)?.(heldWrite)
      held.push(heldWrite)
    })
    written.push(rows.map((row) => row.target_id ?? ''))
  }
  /** Write `index` (from 0), once it has begun. */
  const started = async (index: number): Promise<HeldWrite> =>
    held[index] ?? await new Promise<HeldWrite>((resolve) => { waiting.set(index, resolve) })
  return { written, held, write, started }
}

/** A trail on `storage` whose timer never fires during a test: flushes are the test's. */
function trailOn (t: TestContext, storage: ReturnType<typeof heldStorage>, onError: AuditTrailOptions['onError']): AuditTrail & { add: (id: string) => void } {
  const trail = new AuditTrail({
    write: storage.write,
    writeWith: async () => { throw new Error('these tests record no changes') },
    onError,
    flushIntervalMs: 60_000
  })
  t.teardown(async () => { await trail.close() })
  return Object.assign(trail, { add: (id: string) => { trail.record({ event: 'user.created', outcome: 'success', targetId: id }) } })
}

t.test('flush writes what was queued while another write was in flight', async (t) => {
  const storage = heldStorage()
  const trail = trailOn(t, storage, (error) => { throw error })

  trail.add('a')
  const first = trail.flush()
  trail.add('b')
  let secondDone = false
  const second = trail.flush().then(() => { secondDone = true })

  ;(await storage.started(0)).release()
  await first
  const followUp = await storage.started(1)
  t.notOk(secondDone, 'the second flush waits for what was queued after the first write began')
  followUp.release()
  await second
  t.same(storage.written, [['a'], ['b']], 'both entries written, in order, each once')
})

t.test('a failed write keeps its entries, and the next flush writes them with the newer ones', async (t) => {
  const storage = heldStorage()
  const errors: number[] = []
  const trail = trailOn(t, storage, (_error, pending) => { errors.push(pending) })

  trail.add('a')
  const first = trail.flush()
  trail.add('b')
  const second = trail.flush()

  ;(await storage.started(0)).fail(new Error('storage down'))
  await first
  t.same(errors, [2], 'the failure is reported with both entries waiting')
  ;(await storage.started(1)).release()
  await second
  t.same(storage.written, [['a', 'b']], 'the retry writes the failed entry before the newer one')
})

t.test('flushes during a write share one follow-up write, even when both fail', async (t) => {
  const storage = heldStorage()
  let failures = 0
  const trail = trailOn(t, storage, () => { failures++ })

  trail.add('a')
  const first = trail.flush()
  trail.add('b')
  const during = [trail.flush(), trail.flush(), trail.flush()]
  ;(await storage.started(0)).fail(new Error('storage down'))
  await first
  ;(await storage.started(1)).fail(new Error('still down'))
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve))
  t.equal(storage.held.length, 2, 'three callers, one follow-up write: no retry per caller')
  t.equal(failures, 2)
  // Only on a failing run are there more: let them finish so the test ends rather than hangs.
  for (const write of storage.held.slice(2)) write.release()
  await Promise.all(during)
  trail.add('c')
  const last = trail.flush()
  ;(await storage.started(2)).release()
  await last
  t.same(storage.written, [['a', 'b', 'c']], 'what failed is kept and written with the newer entry')
})
