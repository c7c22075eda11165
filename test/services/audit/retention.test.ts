import t from 'tap'
import { Retention } from '../../../src/services/retention.js'
import { auditRow, backends } from '../../helpers/database.js'
import { buildServices } from '../../helpers/services.js'

const DAY = 24 * 60 * 60 * 1000

for (const backend of backends()) {
  t.test(`audit retention (${backend.name})`, async (t) => {
    t.test('the purge removes every entry past retention, in batches of the given size, and nothing newer', async (t) => {
      const { repositories, database } = await buildServices(t, backend.url)
      await repositories.auditLogs.insertMany([
        ...Array.from({ length: 35 }, (_, index) => auditRow(index, 31)),
        ...Array.from({ length: 5 }, (_, index) => auditRow(100 + index, 29))
      ])
      const batches: Array<{ removed: number, began: number, ended: number }> = []
      const retention = new Retention({
        async purgeBatch (before: string, limit: number) {
          const began = performance.now()
          const removed = await repositories.auditLogs.purgeBatch(before, limit)
          batches.push({ removed, began, ended: performance.now() })
          return removed
        },
        retentionMs: 30 * DAY,
        batch: 10,
        pauseMs: 25
      })
      t.equal(await retention.purge(), 35)
      t.same(batches.map((batch) => batch.removed), [10, 10, 10, 5], 'no statement removes more than a batch')
      const gaps = batches.slice(1).map((batch, index) => batch.began - (batches[index]?.ended ?? 0))
      t.ok(gaps.every((gap) => gap >= 24), `the event loop is left free between batches (${gaps.map((gap) => gap.toFixed(1)).join(', ')} ms)`)
      const left = await database.db.selectFrom('audit_logs').select('id').execute()
      t.equal(left.length, 5, 'the entries within retention stay')
      await retention.stop()
      t.equal(await retention.purge(), 0, 'a stopped purge does no more work')
    })
  })
}
