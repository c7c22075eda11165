import { get } from 'node:http'
import t from 'tap'
import { freePort } from '../../bench/free-port.js'
import type { TestContext } from '../helpers/context.js'
import { freshDatabaseUrl } from '../helpers/database.js'
import { type LogEntry, spawnService } from '../helpers/process.js'

/** Starts src/cluster.ts on a free port, its workers sharing one SQLite file. */
async function startCluster (t: TestContext, env: Record<string, string>) {
  const port = await freePort()
  const databaseUrl = await freshDatabaseUrl(t, null, { shared: true })
  const cluster = spawnService(t, { PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env }, 'src/cluster.ts')
  return { ...cluster, base: `http://127.0.0.1:${port}` }
}

/** Matches the primary's line `msg` (the workers write to the same output). */
function fromPrimary (msg: string): (entry: LogEntry) => boolean {
  return (entry) => entry.role === 'primary' && entry.msg === msg
}

t.test('two workers share the port; a dead worker is replaced; SIGTERM stops all, exit 0', async (t) => {
  const { child: primary, exited, nextLog, base } = await startCluster(t, { WORKERS: '2' })
  // One wait for both lines: the second may arrive in the same read as the first.
  const listening: LogEntry[] = []
  await nextLog((entry) => fromPrimary('worker listening')(entry) && listening.push(entry) === 2)
  const [first, second] = listening as [LogEntry, LogEntry]
  t.not(first.worker, second.worker, 'two worker processes listen')

  const created = await fetch(`${base}/api/v1/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'cluster@example.com', name: 'Cluster', password: 'password1' })
  })
  t.equal(created.status, 201)
  const replies = await Promise.all(Array.from({ length: 20 }, async () => (await fetch(`${base}/health`)).status))
  t.same(new Set(replies), new Set([200]))

  // Both workers listen already, so the next listening line is the replacement's.
  const died = nextLog(fromPrimary('worker died: replacing it'))
  const replaced = nextLog(fromPrimary('worker listening'))
  process.kill(Number(first.worker), 'SIGKILL')
  t.equal((await died).worker, first.worker)
  t.not((await replaced).worker, first.worker, 'a new worker took its place')
  t.equal((await fetch(`${base}/health`)).status, 200)

  const stopped = nextLog(fromPrimary('all workers stopped'))
  primary.kill('SIGTERM')
  await stopped
  t.equal(await exited, 0)
})

t.test('a worker that cannot start stops the service with exit code 1', async (t) => {
  const { exited, nextLog } = await startCluster(t, { WORKERS: '2', RATE_LIMIT_MAX: 'lots' })
  await nextLog(fromPrimary('a worker failed to start: stopping'))
  t.equal(await exited, 1)
})

/** GET `path` on a connection of its own: the cluster hands each new connection to the next worker. */
async function getOnNewConnection (url: string, token: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { authorization: `Bearer ${token}` } }, (response) => {
      response.resume()
      response.once('end', () => resolve(response.statusCode ?? 0))
    }).once('error', reject)
  })
}

t.test('without JWT_SECRET the primary generates one secret for every worker: a token works on each of them', async (t) => {
  const { child: primary, exited, nextLog, onLog, base } = await startCluster(t, { WORKERS: '2', JWT_SECRET: '', LOG_LEVEL: 'info' })
  const warnings: unknown[] = []
  onLog((entry) => { if (entry.role === 'primary' && entry.level === 40) warnings.push(entry.msg) })
  const listening: LogEntry[] = []
  await nextLog((entry) => fromPrimary('worker listening')(entry) && listening.push(entry) === 2)
  t.match(warnings, [/^JWT_SECRET is unset: one random secret was generated for every worker/], 'the primary warns once, for every worker')

  const account = { email: 'shared-secret@example.com', password: 'password1' }
  const created = await fetch(`${base}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...account, name: 'Shared' }) })
  t.equal(created.status, 201)
  const login = await fetch(`${base}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(account) })
  t.equal(login.status, 200)
  const token = ((await login.json()) as { data: { access_token: string } }).data.access_token

  const servedBy: unknown[] = []
  const stop = onLog((entry) => {
    if (entry.msg === 'request completed' && (entry.req as { url?: string } | undefined)?.url === '/api/v1/auth/me') servedBy.push(entry.pid)
  })
  const statuses: number[] = []
  for (let request = 0; request < 6; request++) statuses.push(await getOnNewConnection(`${base}/api/v1/auth/me`, token))
  t.same(statuses, [200, 200, 200, 200, 200, 200], 'the token is accepted on every request')
  // Each worker writes its request line once it has answered.
  while (servedBy.length < 6) await nextLog((entry) => entry.msg === 'request completed')
  stop()
  t.same(new Set(servedBy), new Set(listening.map((entry) => entry.worker)), 'both workers served requests')

  const stopped = nextLog(fromPrimary('all workers stopped'))
  primary.kill('SIGTERM')
  await stopped
  t.equal(await exited, 0)
})
