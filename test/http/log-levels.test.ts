import { availableParallelism } from 'node:os'
import t from 'tap'
import { createAccount } from '../helpers/accounts.js'
import { msUntil } from '../helpers/clock.js'
import { buildLogged, type LogEntry } from '../helpers/log-capture.js'

const WARN = 40

t.test('without SMTP_URL a message is a warning that it was written to the log, not delivered', async (t) => {
  const { app, entries } = await buildLogged(t, { postgresUrl: null })
  const registered = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: 'logged-mail@example.com', name: 'Logged', password: 'password1' } })
  t.equal(registered.statusCode, 201)
  const written = (entry: LogEntry) => entry.to === 'logged-mail@example.com'
  await msUntil(async () => (await entries()).some(written), 5000)
  const lines = (await entries()).filter(written)
  t.equal(lines.length, 1, 'the verification message, once')
  t.match(lines[0], { level: WARN, msg: 'e-mail not delivered: written to the log because SMTP_URL is unset', subject: String })
  const queued = async () => await app.database.db.selectFrom('outbox').select('id').execute()
  await msUntil(async () => (await queued()).length === 0, 5000)
  t.same(await queued(), [], 'the outbox is done with it')
  t.same((await entries()).filter((entry) => entry.msg === 'message delivered'), [], 'and does not call it delivered')
})

t.test('a sign-in storm over the hashing pool\'s capacity: one warning per 503, no error, no stack', async (t) => {
  const { app, entries } = await buildLogged(t, { postgresUrl: null })
  const account = await createAccount(app)
  // Concurrency = cores and queue = 8 × cores: more than that at once must overflow.
  const attempts = availableParallelism() * 9 + 8
  const responses = await Promise.all(Array.from({ length: attempts }, async () =>
    await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })))
  const refused = responses.filter((response) => response.statusCode === 503).length
  t.ok(refused > 0, 'the overflow is refused')
  const logged = await entries()
  const warnings = logged.filter((entry) => entry.msg === 'password hashing at capacity: request refused with 503')
  t.equal(warnings.length, refused, 'one line per refusal')
  t.ok(warnings.every((entry) => entry.level === WARN && entry.err === undefined), 'warnings, without the error and its stack')
  t.same(logged.filter((entry) => Number(entry.level) > WARN), [], 'nothing at error level')
})
