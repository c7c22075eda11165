import { sql } from 'kysely'
import t from 'tap'
import { openDatabase } from '../../src/store/database.js'
import { isStorageUnavailable } from '../../src/store/errors.js'
import { uniqueEmail } from '../helpers/accounts.js'
import { within } from '../helpers/clock.js'
import type { TestContext } from '../helpers/context.js'
import { startService } from '../helpers/process.js'
import { startPostgres } from './instances.js'
import { acknowledgedRegistrations, byStatus, type Exchange, json, Load, readinessAnswer, registrations, send, signUp, userCreatedAudits, waitFor } from './load.js'

/** Longest a request may take, outage or not, before it counts as hung. */
const ANSWER_WITHIN_MS = 5000
/** Longest the service may take, once PostgreSQL is back, to serve reads and writes again. */
const RECOVERY_WITHIN_MS = 10_000

/** With PostgreSQL frozen, a query is given up after 6 s (src/store/database.ts): nothing may take longer than this. */
const FROZEN_ANSWER_WITHIN_MS = 8000

const ok = (e: Exchange) => e.status === 200 || e.status === 201

/** A private PostgreSQL, the service on it with rate limits out of the way, and a signed-up reader. */
async function serviceWithReader (t: TestContext) {
  const postgres = await startPostgres(t)
  const service = await startService(t, { DATABASE_URL: postgres.url, RATE_LIMIT_MAX: '1000000', RATE_LIMIT_AUTH_MAX: '1000000' })
  return { postgres, service, base: service.base, reader: await signUp(service.base, uniqueEmail('reader')) }
}

t.test('PostgreSQL stopped under a load of registrations and reads: 503 while down, recovery, no acknowledged write lost', async (t) => {
  const { postgres, service, base, reader } = await serviceWithReader(t)

  const load = new Load([
    // Below the hashing cap (one hash per core, 8 queued per core): capacity 503s would blur the outage's.
    registrations(base, 3),
    {
      name: 'read',
      workers: 4,
      request: (n) => ({ url: n % 2 === 0 ? `${base}/api/v1/users/${reader.id}` : `${base}/api/v1/users?limit=5`, init: json('GET', undefined, reader.token) })
    }
  ], { answerWithinMs: ANSWER_WITHIN_MS, paceMs: 20 })
  t.teardown(async () => await load.stop())

  const succeeding = (from: number, writes: number, reads: number) => (all: Exchange[]) => {
    const since = all.filter((e) => e.sentAt >= from && ok(e))
    return since.filter((e) => e.stream === 'register').length >= writes && since.filter((e) => e.stream === 'read').length >= reads
  }

  for (const mode of ['immediate', 'fast'] as const) {
    await t.test(`pg_ctl stop -m ${mode}`, async (t) => {
      await load.until('registrations and reads succeed', 30_000, succeeding(Date.now(), 10, 20))

      const faultAt = Date.now()
      // Listened for from the fault: the poll may fail while pg_ctl is still stopping the server.
      const pollFailed = service.nextLog((entry) => entry.msg === 'revocation sync failed; retrying')
      await postgres.stop(mode)
      const downAt = Date.now()

      const liveness = await send(`${base}/health`)
      t.same([liveness.status, liveness.body], [200, { status: 'ok' }], '/health: the process is alive')
      const readiness = await readinessAnswer(base, 503, 5000)
      t.same(readiness.body, { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: database unreachable' } }, '/health/ready: 503 naming the database')

      // Down until the background revocation poll has failed too, and enough requests were answered.
      await load.until('the outage seen by requests', 15_000, (all) => {
        const during = all.filter((e) => e.sentAt >= downAt)
        return during.filter((e) => e.stream === 'register').length >= 10 && during.filter((e) => e.stream === 'read').length >= 50
      })
      await within('the outage seen by the revocation poll', 15_000, pollFailed)
      const restartAt = Date.now()
      // Listened for from the restart: the poll may recover before pg_ctl returns.
      const pollRecovered = service.nextLog((entry) => entry.msg === 'revocation sync recovered').then(() => Date.now())
      await postgres.start()
      const upAt = Date.now()

      const outage = load.between(downAt, restartAt)
      t.same(outage.filter((e) => e.status !== 503).map((e) => `${e.stream} ${e.status ?? e.failure}`), [], 'every request during the outage answered 503')
      const slowest = Math.max(...outage.map((e) => e.answeredAt - e.sentAt))

      await load.until('registrations and reads succeed again', RECOVERY_WITHIN_MS, succeeding(upAt, 1, 1))
      const firstSuccess = (stream: string) =>
        load.between(upAt).find((e) => e.stream === stream && ok(e))?.answeredAt ?? Infinity
      const recoveryMs = Math.max(firstSuccess('register'), firstSuccess('read')) - upAt
      const ready = await readinessAnswer(base, 200, RECOVERY_WITHIN_MS)
      t.equal(ready.body.checks.database, 'ok', '/health/ready: the database is back')
      const pollRecoveredAt = await within('the revocation poll recovers', RECOVERY_WITHIN_MS, pollRecovered)

      const inFlight = load.exchanges.filter((e) => e.stream === 'register' && e.sentAt < faultAt && e.answeredAt > faultAt)
      t.comment(`fault: pg_ctl stop -m ${mode}, down ${restartAt - downAt} ms; registrations in flight at the fault: ${JSON.stringify(byStatus(inFlight))}`)
      t.comment(`requests during the outage: registrations ${JSON.stringify(byStatus(outage.filter((e) => e.stream === 'register')))}, reads ${JSON.stringify(byStatus(outage.filter((e) => e.stream === 'read')))}; slowest answer ${slowest} ms`)
      t.comment(`recovery: reads and writes succeed ${recoveryMs} ms, the revocation poll ${pollRecoveredAt - upAt} ms after PostgreSQL accepted connections again`)
    })
  }

  await load.until('registrations and reads succeed after the faults', 30_000, succeeding(Date.now(), 10, 20))
  await load.stop()
  const all = load.exchanges
  t.same(all.filter((e) => e.status === null).map((e) => `${e.stream} ${e.failure}`), [], `no request hung (${ANSWER_WITHIN_MS} ms) or lost its connection`)
  t.same(all.filter((e) => ![200, 201, 503].includes(e.status ?? 0)).map((e) => `${e.stream} ${e.status}: ${JSON.stringify(e.body)}`), [], 'statuses are 200, 201 or 503 only: never a 500')
  t.same(all.filter((e) => e.status === 503 && (e.body?.error?.code !== 'SERVICE_UNAVAILABLE' || e.headers?.get('retry-after') !== '1')).map((e) => JSON.stringify(e.body)), [],
    'every 503 is SERVICE_UNAVAILABLE with Retry-After')
  t.equal(service.child.exitCode, null, 'the service never exited')

  const client = await postgres.connect()
  const { acknowledged, stored } = await acknowledgedRegistrations(client, all)
  const lost = acknowledged.filter((id) => !stored.has(id))
  t.ok(acknowledged.length > 0, 'writes were acknowledged')
  t.same(lost, [], 'every acknowledged registration is in the database')
  // Audit entries are written in batches off the request path and kept for a retry while the database is down.
  const audited = await waitFor('every acknowledged registration is audited', 5000, async () =>
    await userCreatedAudits(client, acknowledged) === acknowledged.length ? acknowledged.length : undefined)
  t.comment(`requests: ${all.length} in all, ${JSON.stringify(byStatus(all))}`)
  t.comment(`writes acknowledged: ${acknowledged.length}, found: ${stored.size}, writes lost: ${lost.length}; user.created audit entries: ${audited}`)
})

t.test('PostgreSQL frozen (SIGSTOP) under load: every request answers 503 within the query timeout, none hangs, and the service recovers on thaw', async (t) => {
  const { postgres, service, base, reader } = await serviceWithReader(t)
  const load = new Load([
    registrations(base, 2),
    { name: 'read', workers: 4, request: () => ({ url: `${base}/api/v1/users/${reader.id}`, init: json('GET', undefined, reader.token) }) }
  ], { answerWithinMs: FROZEN_ANSWER_WITHIN_MS, paceMs: 20 })
  t.teardown(async () => await load.stop())
  const healthyAt = Date.now()
  await load.until('registrations and reads succeed', 30_000, (all) => {
    const since = all.filter((e) => e.sentAt >= healthyAt && ok(e))
    return since.some((e) => e.stream === 'register') && since.filter((e) => e.stream === 'read').length >= 20
  })

  postgres.freeze()
  t.teardown(postgres.thaw)
  const frozenAt = Date.now()
  const liveness = await send(`${base}/health`)
  t.same([liveness.status, liveness.body], [200, { status: 'ok' }], '/health: the process is alive')
  const readiness = await readinessAnswer(base, 503, FROZEN_ANSWER_WITHIN_MS)
  t.same(readiness.body, { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: database unreachable' } }, '/health/ready: 503 naming the database')
  // Frozen until requests sent a whole answer bound after the freeze are answered: by then
  // every connection open at the freeze has met its query timeout.
  await load.until('the freeze seen by requests', 30_000, (all) => {
    const during = all.filter((e) => e.sentAt >= frozenAt)
    return during.some((e) => e.stream === 'register') && during.some((e) => e.stream === 'read' && e.sentAt >= frozenAt + FROZEN_ANSWER_WITHIN_MS)
  })
  const thawAt = Date.now()
  postgres.thaw()

  const frozen = load.between(frozenAt, thawAt)
  t.same(frozen.filter((e) => e.status !== 503 || e.body?.error?.code !== 'SERVICE_UNAVAILABLE').map((e) => `${e.stream} ${e.status ?? e.failure}`), [],
    'every request during the freeze answered 503 SERVICE_UNAVAILABLE')
  await load.until('registrations and reads succeed again', RECOVERY_WITHIN_MS, (all) => {
    const since = all.filter((e) => e.sentAt >= thawAt && ok(e))
    return since.some((e) => e.stream === 'register') && since.some((e) => e.stream === 'read')
  })
  await load.stop()

  const all = load.exchanges
  t.same(all.filter((e) => e.status === null).map((e) => `${e.stream} ${e.failure}`), [], `no request hung (${FROZEN_ANSWER_WITHIN_MS} ms)`)
  t.same(all.filter((e) => ![200, 201, 503].includes(e.status ?? 0)).map((e) => `${e.stream} ${e.status}: ${JSON.stringify(e.body)}`), [], 'statuses are 200, 201 or 503 only: never a 500')
  t.equal(service.child.exitCode, null, 'the service never exited')
  const { acknowledged, stored } = await acknowledgedRegistrations(await postgres.connect(), all)
  t.same(acknowledged.filter((id) => !stored.has(id)), [], 'every acknowledged registration is in the database')
  t.comment(`frozen ${thawAt - frozenAt} ms; requests during the freeze: ${JSON.stringify(byStatus(frozen))}, slowest answer ${Math.max(...frozen.map((e) => e.answeredAt - e.sentAt))} ms`)
})

t.test('a connection dropped inside a transaction fails the transaction as unavailable, without crashing the process', async (t) => {
  const postgres = await startPostgres(t)
  let reportLost!: (error: Error) => void
  const lost = new Promise<Error>((resolve) => { reportLost = resolve })
  const database = openDatabase({ dialect: 'postgres', url: postgres.url }, { onError: reportLost })
  t.teardown(async () => await database.close())
  const admin = await postgres.connect()

  const failure = await database.db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
    // Between two statements the client is checked out with no query running: the pool does
    // not listen to it then, and an 'error' event nobody listens to ends the process.
    await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid])
    await within('the dropped connection is reported', 5000, lost)
    await sql`select 1`.execute(trx)
  }).then(() => null, (error: unknown) => error)
  t.ok(isStorageUnavailable(failure), `the next statement's error counts as storage unavailable (${String(failure)})`)
  t.match((await lost).message, /terminating connection due to administrator command/, 'the drop was reported as a lost connection')
  t.same((await sql<{ one: number }>`select 1 as one`.execute(database.db)).rows, [{ one: 1 }], 'the pool serves the next query on a new connection')
})

t.test('a query its server never answers fails as unavailable after the query timeout, and its connection is replaced, not reused', async (t) => {
  const postgres = await startPostgres(t)
  const database = openDatabase({ dialect: 'postgres', url: postgres.url })
  t.teardown(async () => await database.close())
  const backendPid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0]?.pid
  // The pool's only connection; its server process alone is stopped, as behind a lost network.
  const stuck = Number(await backendPid())
  process.kill(stuck, 'SIGSTOP')
  let stopped = true
  // Once resumed, the process ends as soon as it sees its connection closed.
  const resume = () => {
    if (stopped) process.kill(stuck, 'SIGCONT')
    stopped = false
  }
  t.teardown(resume)

  const sentAt = Date.now()
  const failure = await sql`select 1`.execute(database.db).then(() => null, (error: unknown) => error)
  const waitedMs = Date.now() - sentAt
  t.ok(isStorageUnavailable(failure), `the query fails as storage unavailable (${String(failure)})`)
  t.ok(waitedMs >= 5000 && waitedMs < FROZEN_ANSWER_WITHIN_MS, `after the query timeout (${waitedMs} ms)`)
  // Resumed, the old connection would answer again: it must not be the one serving the next query.
  resume()
  const next = await backendPid()
  t.not(next, stuck, 'the next query runs on a new connection')
})
