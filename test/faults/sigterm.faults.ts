import t from 'tap'
import { uniqueEmail } from '../helpers/accounts.js'
import { startService } from '../helpers/process.js'
import { startPostgres } from './instances.js'
import { acknowledgedRegistrations, byStatus, type Exchange, json, Load, LOAD_ID_HEADER, registrations, signUp, userCreatedAudits } from './load.js'

/** server.ts's close-with-grace delay: a shutdown taking longer exits 1. */
const GRACE_MS = 10_000

const loadId = (e: Exchange) => `${e.stream}#${e.n}`

t.test('SIGTERM under load: accepted requests are answered, acknowledged writes and their audit entries are stored, exit 0', async (t) => {
  const postgres = await startPostgres(t)
  // Debug level logs each request as it is accepted, with its headers.
  const service = await startService(t, { DATABASE_URL: postgres.url, LOG_LEVEL: 'debug', RATE_LIMIT_MAX: '1000000', RATE_LIMIT_AUTH_MAX: '1000000' })
  const { base } = service
  const accepted = new Set<string>()
  service.onLog((entry) => {
    if (entry.msg !== 'incoming request') return
    const id = (entry.req as { headers?: Record<string, string> } | undefined)?.headers?.[LOAD_ID_HEADER]
    if (id !== undefined) accepted.add(id)
  })
  const reader = await signUp(base, uniqueEmail('reader'))

  const load = new Load([
    registrations(base, 3),
    { name: 'read', workers: 3, request: () => ({ url: `${base}/api/v1/users/${reader.id}`, init: json('GET', undefined, reader.token) }) }
  ], { answerWithinMs: GRACE_MS, paceMs: 20 })
  t.teardown(async () => await load.stop())

  const from = Date.now()
  await load.until('registrations and reads succeed', 30_000, (all) => {
    const since = all.filter((e) => e.sentAt >= from)
    return since.filter((e) => e.status === 201).length >= 10 && since.filter((e) => e.status === 200).length >= 20
  })
  // Signal while a registration (~60 ms of hashing) is being handled.
  await service.nextLog((entry) => entry.msg === 'incoming request' && (entry.req as { method?: string }).method === 'POST')
  const signalAt = Date.now()
  service.child.kill('SIGTERM')
  const code = await service.exited
  const exitedAt = Date.now()
  await load.stop()

  t.equal(code, 0, 'exit code 0')
  t.ok(exitedAt - signalAt < GRACE_MS, `closed within the grace delay (${exitedAt - signalAt} ms)`)

  const all = load.exchanges
  const inFlight = all.filter((e) => e.sentAt < signalAt && e.answeredAt > signalAt)
  const unanswered = all.filter((e) => e.status === null)
  t.ok(inFlight.some((e) => e.stream === 'register' && e.status === 201), 'a registration in flight at the signal was answered 201')
  t.same(all.filter((e) => e.status !== null && !accepted.has(loadId(e))).map(loadId), [],
    'the service logged every request it answered, so its log tells which requests it accepted')
  t.same(all.filter((e) => accepted.has(loadId(e)) && e.status === null).map((e) => `${loadId(e)} ${e.failure}`), [],
    'every request the service accepted was answered: no connection reset')
  t.same(all.filter((e) => e.status !== null && ![200, 201].includes(e.status)).map((e) => `${loadId(e)} ${e.status}: ${JSON.stringify(e.body)}`), [],
    'every answer is a success')

  const client = await postgres.connect()
  const { acknowledged, stored } = await acknowledgedRegistrations(client, all)
  const audited = await userCreatedAudits(client, acknowledged)
  t.equal(stored.size, acknowledged.length, 'every acknowledged registration is stored')
  t.equal(audited, acknowledged.length, 'and its user.created audit entry was flushed before exit')

  t.comment(`fault: SIGTERM under ${all.filter((e) => e.sentAt < signalAt).length} requests; exit ${code} after ${exitedAt - signalAt} ms`)
  t.comment(`in flight at the signal: ${JSON.stringify(byStatus(inFlight))}; sent after it on open connections and served: ${JSON.stringify(byStatus(all.filter((e) => e.sentAt >= signalAt && e.status !== null)))}`)
  t.comment(`accepted ${accepted.size}, answered ${all.filter((e) => accepted.has(loadId(e)) && e.status !== null).length}`)
  t.comment(`not accepted (sent after the listener closed, or on a keep-alive connection being closed): ${JSON.stringify(byStatus(unanswered))}`)
  t.comment(`writes acknowledged: ${acknowledged.length}, stored: ${stored.size}, audited: ${audited}`)
})
