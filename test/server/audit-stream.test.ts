import t from 'tap'
import { sqliteFile } from '../helpers/database.js'
import { buildLogged } from '../helpers/log-capture.js'
import { startService } from '../helpers/process.js'

t.test('AUDIT_STREAM=stdout: each stored audit entry is a line of the service\'s log, whatever LOG_LEVEL says', async (t) => {
  const { url } = sqliteFile(t)
  // The listening line is at info: it is awaited before the level rises.
  const { base, nextLog } = await startService(t, { DATABASE_URL: url, AUDIT_STREAM: 'stdout' })
  const streamed = nextLog((entry) => entry.msg === 'audit entry' && (entry.audit as { event?: string }).event === 'auth.login_failed')
  const refused = await fetch(`${base}/api/v1/auth/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'nobody@example.com', password: 'wrong-password-1' })
  })
  t.equal(refused.status, 401)
  const line = await streamed
  t.match(line, { level: 30, audit: { outcome: 'failure', ip: '127.0.0.1', details: { reason: 'unknown_email', email: 'nobody@example.com' } } })
  t.notMatch(JSON.stringify(line), /wrong-password-1/, 'redacted as stored')
})

t.test('AUDIT_STREAM=stdout: a refresh\'s entry, stored by the rotation\'s own statement, is streamed once stored', async (t) => {
  const { app, entries } = await buildLogged(t, { postgresUrl: null, env: { AUDIT_STREAM: 'stdout', LOG_LEVEL: 'error' } })
  const credentials = { email: 'streamed@example.com', password: 'streamed-passphrase-1' }
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload: { ...credentials, name: 'Streamed' } })).statusCode, 201)
  const signedIn = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: credentials })).json()
  const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: signedIn.data.refresh_token } })
  t.equal(refreshed.statusCode, 200)
  const events = (await entries()).map((line) => (line.audit as { event?: string } | undefined)?.event)
  t.same(events.filter((event) => event === 'auth.login' || event === 'auth.refresh'), ['auth.login', 'auth.refresh'], 'once each, in order')
})

t.test('AUDIT_STREAM=stdout writes the entries with LOG_LEVEL=error too, and nothing else at info', async (t) => {
  const { app, entries } = await buildLogged(t, { postgresUrl: null, env: { AUDIT_STREAM: 'stdout', LOG_LEVEL: 'error' } })
  const refused = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody@example.com', password: 'wrong-password-1' } })
  t.equal(refused.statusCode, 401)
  const logged = await entries()
  t.equal(logged.length, 1, 'one line')
  t.match(logged, [{ level: 30, msg: 'audit entry', audit: { event: 'auth.login_failed' } }], 'the entry, and no request log line at info')
})
