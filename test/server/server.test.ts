import { existsSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { freePort } from '../../bench/free-port.js'
import { sqliteFile } from '../helpers/database.js'
import { type LogEntry, spawnServer, spawnService, startService } from '../helpers/process.js'

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

/** Runs the server with `env` (and a JWT secret) until it exits; its exit code and output. */
async function runUntilExit (
  env: Record<string, string>
): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const server = spawnServer({ JWT_SECRET: 'x'.repeat(32), ...env }, ['ignore', 'pipe', 'pipe'])
  let stdout = ''
  let stderr = ''
  server.stdout?.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  server.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => server.once('close', resolve))
  return { code, stdout, stderr }
}

t.test('every bad variable is reported at once', async (t) => {
  const { code, stderr } = await runUntilExit({ JWT_SECRET: 'short', PORT: '99999', DATABASE_URL: 'sqlite://:memory:' })
  t.equal(code, 1)
  t.equal(stderr, 'Invalid configuration:\n  - JWT_SECRET must be at least 32 characters long\n  - PORT must be at most 65535 (got "99999")\n')
})

t.test('a failure to start after the configuration check is one line naming the variable and the cause, exit 1', async (t) => {
  /** The one line on stderr, and no JSON log line of an unexpected error. */
  const failureOf = async (t: Test, env: Record<string, string>): Promise<string> => {
    const { code, stdout, stderr } = await runUntilExit(env)
    t.equal(code, 1, 'exit code 1')
    t.notMatch(stdout, /unexpected error/)
    t.equal(stderr.split('\n').length, 2, `one line: ${stderr}`)
    return stderr
  }

  t.test('the port is taken', async (t) => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    t.teardown(() => taken.close())
    const { port } = taken.address() as AddressInfo
    t.equal(await failureOf(t, { PORT: String(port), DATABASE_URL: 'sqlite://:memory:' }),
      `Start-up failed: cannot listen on 127.0.0.1:${port}: address already in use (EADDRINUSE) — set PORT\n`)
  })

  t.test('PostgreSQL is down', async (t) => {
    const port = await freePort()
    t.equal(await failureOf(t, { DATABASE_URL: `postgres://users:S3cretDbPass@127.0.0.1:${port}/app` }),
      `Start-up failed: cannot open the database (PostgreSQL at 127.0.0.1:${port}): connection refused (ECONNREFUSED) — check DATABASE_URL\n`)
  })

  t.test('the SQLite file\'s folder is a file', async (t) => {
    const { path } = sqliteFile(t)
    writeFileSync(path, '')
    t.equal(await failureOf(t, { DATABASE_URL: `sqlite://${path}/app.db` }),
      `Start-up failed: cannot open the database (SQLite file ${path}/app.db): mkdir ${path}: file already exists (EEXIST) — check DATABASE_URL\n`)
  })
})

t.test('start-up logs where the API documentation is', async (t) => {
  const { nextLog } = spawnService(t, { PORT: '0', DATABASE_URL: 'sqlite://:memory:' })
  const listening = nextLog((entry) => String(entry.msg).startsWith('Server listening at '))
  const documentation = await nextLog((entry) => String(entry.msg).startsWith('API documentation at '))
  const base = String((await listening).msg).replace('Server listening at ', '')
  t.equal(documentation.msg, `API documentation at ${base}/api/docs`)
  t.ok((await fetch(`${base}/api/docs`)).ok, 'the address answers')
})
