import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import SQLite from 'better-sqlite3'
import t from 'tap'

t.test('SIGTERM: in-flight requests finish, the database closes, exit 0', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'users-api-server-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const databasePath = join(dir, 'app.db')
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { ...process.env, PORT: '0', DATABASE_URL: `sqlite://${databasePath}`, LOG_LEVEL: 'debug', JWT_SECRET: 'x'.repeat(32) },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  t.teardown(() => { if (server.exitCode === null) server.kill('SIGKILL') })
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)))
  const lines = createInterface({ input: server.stdout })
  const nextLog = async (matches: (entry: Record<string, unknown>) => boolean) =>
    await new Promise<Record<string, unknown>>((resolve, reject) => {
      const onLine = (line: string) => {
        const entry = JSON.parse(line) as Record<string, unknown>
        if (!matches(entry)) return
        lines.off('line', onLine)
        resolve(entry)
      }
      lines.on('line', onLine)
      lines.once('close', () => reject(new Error('server output ended')))
    })

  const listening = await nextLog((entry) => String(entry.msg).startsWith('Server listening at http://127.0.0.1:'))
  const base = String(listening.msg).replace('Server listening at ', '')

  // A registration spends ~60 ms hashing: signal while it is in flight.
  const registration = fetch(`${base}/api/v1/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'late@example.com', name: 'Late', password: 'password1' })
  })
  await nextLog((entry) => entry.msg === 'incoming request')
  server.kill('SIGTERM')

  const response = await registration
  t.equal(response.status, 201, 'the in-flight request was answered')
  t.equal(await exited, 0, 'exit code 0')
  t.notOk(existsSync(`${databasePath}-wal`), 'the database was closed (WAL checkpointed and removed)')
  const database = new SQLite(databasePath, { readonly: true })
  t.teardown(() => database.close())
  t.same(database.prepare('select email from users').all(), [{ email: 'late@example.com' }], 'the write is durable')
  t.same(database.prepare('select event from audit_logs').all(), [{ event: 'user.created' }], 'the audit trail was flushed')
})

t.test('a bad configuration stops start-up with a message naming the variable', async (t) => {
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: { ...process.env, RATE_LIMIT_MAX: 'lots', DATABASE_URL: 'sqlite://:memory:' },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  server.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => server.once('exit', resolve))
  t.equal(code, 1)
  t.match(stderr, /RATE_LIMIT_MAX must be a positive integer \(got "lots"\)/)
})
