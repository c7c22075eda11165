import { availableParallelism } from 'node:os'
import t from 'tap'
import { createAccount } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'

t.test('a sign-in storm beyond the hashing queue is shed with 503, never queued without bound', async (t) => {
  const app = await build(t)
  const account = await createAccount(app)
  // Concurrency = cores and queue = 8 × cores: more than that at once must overflow.
  const attempts = availableParallelism() * 9 + 8
  const responses = await Promise.all(Array.from({ length: attempts }, async () =>
    await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })))
  const statuses = responses.map((response) => response.statusCode)
  const shed = responses.filter((response) => response.statusCode === 503)
  t.ok(statuses.filter((status) => status === 200).length >= availableParallelism() * 9, 'the queue is served')
  t.ok(shed.length > 0, 'the overflow is refused')
  t.same(new Set(statuses), new Set([200, 503]))
  t.same(shed[0]?.json(), { error: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: too many sign-ins in progress' } })
  t.equal(shed[0]?.headers['retry-after'], '1')
  const after = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password } })
  t.equal(after.statusCode, 200, 'capacity returns once the storm passes')
})
