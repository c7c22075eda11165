import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import t, { type Test } from 'tap'
import { freePort } from '../bench/free-port.js'
import { spawnServer } from './service.js'

/** Starts src/cluster.ts; `nextPrimaryLog` waits for the primary's next line matching a message. */
async function startCluster (t: Test, env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'users-api-cluster-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const port = await freePort()
  const primary = spawnServer(
    { PORT: String(port), DATABASE_URL: `sqlite://${join(dir, 'app.db')}`, JWT_SECRET: 'x'.repeat(32), LOG_LEVEL: 'warn', ...env },
    ['ignore', 'pipe', 'inherit'],
    'src/cluster.ts'
  )
  t.teardown(() => { if (primary.exitCode === null) primary.kill('SIGKILL') })
  const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)))
  const entries: Array<Record<string, unknown>> = []
  const waiters: Array<{ msg: string, resolve: (entry: Record<string, unknown>) => void }> = []
  createInterface({ input: primary.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const entry = JSON.parse(line) as Record<string, unknown>
    if (entry.role !== 'primary') return
    const waiter = waiters.find((candidate) => candidate.msg === entry.msg)
    if (waiter === undefined) entries.push(entry)
    else {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve(entry)
    }
  })
  const nextPrimaryLog = async (msg: string) => {
    const index = entries.findIndex((entry) => entry.msg === msg)
    if (index !== -1) return entries.splice(index, 1)[0] as Record<string, unknown>
    return await new Promise<Record<string, unknown>>((resolve) => waiters.push({ msg, resolve }))
  }
  return { primary, exited, nextPrimaryLog, base: `http://127.0.0.1:${port}` }
}

t.test('two workers share the port; a dead worker is replaced; SIGTERM stops all, exit 0', async (t) => {
  const { primary, exited, nextPrimaryLog, base } = await startCluster(t, { WORKERS: '2' })
  const first = await nextPrimaryLog('worker listening')
  const second = await nextPrimaryLog('worker listening')
  t.not(first.worker, second.worker, 'two worker processes listen')

  const created = await fetch(`${base}/api/v1/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'cluster@example.com', name: 'Cluster', password: 'password1' })
  })
  t.equal(created.status, 201)
  const replies = await Promise.all(Array.from({ length: 20 }, async () => (await fetch(`${base}/health`)).status))
  t.same(new Set(replies), new Set([200]))

  process.kill(Number(first.worker), 'SIGKILL')
  t.equal((await nextPrimaryLog('worker died: replacing it')).worker, first.worker)
  const replacement = await nextPrimaryLog('worker listening')
  t.not(replacement.worker, first.worker, 'a new worker took its place')
  t.equal((await fetch(`${base}/health`)).status, 200)

  primary.kill('SIGTERM')
  await nextPrimaryLog('all workers stopped')
  t.equal(await exited, 0)
})

t.test('a worker that cannot start stops the service with exit code 1', async (t) => {
  const { exited, nextPrimaryLog } = await startCluster(t, { WORKERS: '2', RATE_LIMIT_MAX: 'lots' })
  await nextPrimaryLog('a worker failed to start: stopping')
  t.equal(await exited, 1)
})
