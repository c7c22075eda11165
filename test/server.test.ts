import { existsSync } from 'node:fs'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { sqliteFile } from './helper.js'
import { type LogEntry, spawnServer, startService } from './service.js'

t.test('SIGTERM: in-flight requests finish, the database closes, exit 0', async (t) => {
  const { url, path: databasePath } = sqliteFile(t)
  const { base, child: server, exited, nextLog, onLog } = await startService(t, { DATABASE_URL: url, LOG_LEVEL: 'debug' })
  const logged: LogEntry[] = []
  onLog((entry) => logged.push(entry))

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
  t.ok(logged.some((entry) => entry.msg === 'request completed' && (entry.res as { statusCode?: number } | undefined)?.statusCode === 201),
    'the last exchange was logged before exit')
  t.notOk(existsSync(`${databasePath}-wal`), 'the database was closed (WAL checkpointed and removed)')
  const database = new SQLite(databasePath, { readonly: true })
  t.teardown(() => database.close())
  t.same(database.prepare('select email from users').all(), [{ email: 'late@example.com' }], 'the write is durable')
  t.same(database.prepare('select event from audit_logs order by event').all(), [{ event: 'email.verification_sent' }, { event: 'user.created' }], 'the audit trail was flushed')
})

t.test('a bad configuration stops start-up with a message naming the variable', async (t) => {
  const server = spawnServer({ RATE_LIMIT_MAX: 'lots', DATABASE_URL: 'sqlite://:memory:' }, ['ignore', 'ignore', 'pipe'])
  let stderr = ''
  server.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => server.once('exit', resolve))
  t.equal(code, 1)
  t.match(stderr, /RATE_LIMIT_MAX must be a positive integer \(got "lots"\)/)
})
