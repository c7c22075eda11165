import { on } from 'node:events'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { build } from '../../helpers/app.js'
import { buildLogged } from '../../helpers/log-capture.js'

const JOBS = [
  'oauth-discovery', 'revocation-sync', 'revocation-prune', 'revocation-purge', 'refresh-retry-erase',
  'outbox-drain', 'webhook-delivery', 'webhook-delivery-purge', 'sso-metadata-refresh', 'account-erasure',
  'authorization-artifact-purge', 'audit-retention-purge', 'audit-flush'
]
/** The jobs run every 2 s or more often: a test can watch them run. */
const FAST_JOBS = ['revocation-sync', 'outbox-drain', 'webhook-delivery', 'audit-flush']
/** Those run every second or more often (all timers are stopped alike). */
const FASTEST_JOBS = ['revocation-sync', 'audit-flush']

/** Resolves with the errors of the next `count` runs of `name` that failed (or succeeded) as `failed` says. */
async function runs (app: FastifyInstance, name: string, count: number, failed?: boolean): Promise<unknown[]> {
  // The jobs' timers do not keep the process alive (unref): this does while the test waits.
  const alive = setInterval(() => {}, 60_000)
  const errors: unknown[] = []
  try {
    for await (const [job, error] of on(app.backgroundJobs.events, 'run')) {
      if (job !== name || (failed !== undefined && (error !== null) !== failed)) continue
      errors.push(error)
      if (errors.length === count) break
    }
  } finally {
    clearInterval(alive)
  }
  return errors
}

function snapshot (app: FastifyInstance) {
  return app.backgroundJobs.jobs.map(({ name, active, runs }) => ({ name, active, runs }))
}

t.test('every job of the table starts once the app is ready and stops at close', async (t) => {
  let beforeReady: ReturnType<typeof snapshot> = []
  const app = await build(t, {
    extend: (app) => { app.register(async () => { beforeReady = snapshot(app) }) }
  })
  t.same(beforeReady.map((job) => job.name), JOBS, 'one table lists them all')
  t.ok(beforeReady.every((job) => !job.active && job.runs === 0), 'none runs before ready')

  for (const job of app.backgroundJobs.jobs) {
    t.ok(job.active, `${job.name} started`)
    t.ok(job.does.length > 0 && job.shared.length > 0, `${job.name} says what it does and how instances share it`)
    if (job.atReady) t.ok(job.runs >= 1, `${job.name} ran at ready`)
  }
  t.same(app.backgroundJobs.jobs.filter((job) => job.everyMs === null).map((job) => job.name), ['oauth-discovery'])
  await Promise.all(FAST_JOBS.map(async (name) => await runs(app, name, 1)))

  await app.close()
  const closed = snapshot(app)
  t.ok(closed.every((job) => !job.active), 'all stopped')
  // Another instance's same jobs running twice: each interval has passed since the close.
  const other = await build(t)
  await Promise.all(FASTEST_JOBS.map(async (name) => await runs(other, name, 2)))
  t.same(snapshot(app), closed, 'no run after close: no timer left')
})

t.test('a failing job is logged and audited once per spell of failures; the app keeps serving', async (t) => {
  const { app, entries } = await buildLogged(t, { postgresUrl: null })
  const { revocations, outbox } = app.repositories
  const since = revocations.since
  const claimDue = outbox.claimDue
  const down = async (): Promise<never> => { throw new Error('database unreachable') }

  const failures = Promise.all([runs(app, 'revocation-sync', 3, true), runs(app, 'outbox-drain', 2, true)])
  revocations.since = down
  outbox.claimDue = down
  const [syncErrors, outboxErrors] = await failures
  t.match(syncErrors, [{ message: 'database unreachable' }, { message: 'database unreachable' }, Error])
  t.equal(outboxErrors.length, 2)
  t.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'still serving')

  const recovered = Promise.all([runs(app, 'revocation-sync', 1, false), runs(app, 'outbox-drain', 1, false)])
  revocations.since = since
  outbox.claimDue = claimDue
  await recovered
  // A new spell of failures is audited again.
  const again = runs(app, 'revocation-sync', 1, true)
  revocations.since = down
  await again
  revocations.since = since

  const log = await entries()
  const logged = (message: string) => log.filter((entry) => entry.msg === message)
  const syncFailures = logged('revocation sync failed; retrying')
  t.equal(syncFailures.length, 2, 'the sync logs the first failure of each spell')
  t.ok(syncFailures.every((entry) => entry.level === 40 && entry.job === 'revocation-sync'))
  t.equal(logged('revocation sync recovered').length, 1)
  const outboxFailures = app.backgroundJobs.jobs.find((job) => job.name === 'outbox-drain')?.failures
  t.equal(logged('outbox unreachable; delivery retried at the next round').length, outboxFailures,
    'the outbox logs each failure, once')

  await app.auditTrail.flush()
  const audited = await app.database.db.selectFrom('audit_logs').select(['outcome', 'details'])
    .where('event', '=', 'job.failed').execute()
  const jobs = audited.map((row) => ({ outcome: row.outcome, details: JSON.parse(row.details) as { job: string } }))
  t.same(jobs.sort((a, b) => a.details.job.localeCompare(b.details.job)), [
    { outcome: 'failure', details: { job: 'outbox-drain' } },
    { outcome: 'failure', details: { job: 'revocation-sync' } },
    { outcome: 'failure', details: { job: 'revocation-sync' } }
  ], 'one entry per job and spell of failures')
})
