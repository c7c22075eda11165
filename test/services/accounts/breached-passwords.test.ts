import t, { type Test } from 'tap'
import { Errors } from '../../../src/errors.js'
import { BREACH_CHECK_TIMEOUT_MS } from '../../../src/services/accounts/breached-passwords.js'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { pwnedPasswordsServer, sha1Hex } from '../../helpers/servers/pwned-passwords.js'
import { actingAs, buildServices, contextFrom, owner, type ServiceFixture, tokenSent } from '../../helpers/services.js'

/** A password the test range API knows from 3,861 breaches. */
const BREACHED = 'correct-horse-battery-staple-1'
const FRESH = 'an-unbreached-passphrase-9'

async function withRangeApi (t: Test, url: string | null, mode: 'off' | 'warn' | 'block') {
  const api = await pwnedPasswordsServer(t)
  api.add(BREACHED, 3861)
  const fixture = await buildServices(t, url, { PASSWORD_BREACH_CHECK: mode, PASSWORD_BREACH_API_URL: api.url })
  return { api, fixture }
}

async function register ({ services }: ServiceFixture, password: string, email = uniqueEmail('breach')) {
  return await services.accounts.register(contextFrom('192.0.2.60'), { email, name: 'Breach Check', password })
}

for (const backend of backends()) {
  t.test(`breached passwords (${backend.name})`, async (t) => {
    t.test('block: a breached password is refused at registration, change and reset; only 5 hex characters of its SHA-1 leave', async (t) => {
      const { api, fixture } = await withRangeApi(t, backend.url, 'block')
      const email = uniqueEmail('refused')
      await t.rejects(register(fixture, BREACHED, email), Errors.PASSWORD_BREACHED)
      t.equal(await fixture.repositories.users.findByEmail(email), undefined, 'no account was made')
      t.match(await fixture.audited('password.breached'), [{ outcome: 'failure', details: { purpose: 'registration', mode: 'block', occurrences: 3861 } }])

      const account = await owner(fixture)
      const change = { password: BREACHED, current_password: TEST_PASSWORD }
      await t.rejects(fixture.services.accounts.update(actingAs(account), account.id, change), Errors.PASSWORD_BREACHED)
      await fixture.services.passwordReset.requestReset(contextFrom('192.0.2.61'), { email: account.email })
      const token = await tokenSent(fixture, account.email, 'Reset')
      await t.rejects(fixture.services.passwordReset.reset(contextFrom('192.0.2.61'), { token, password: BREACHED }), Errors.PASSWORD_BREACHED)
      await fixture.services.passwordReset.reset(contextFrom('192.0.2.61'), { token, password: FRESH })
      t.pass('the refused reset left its token usable')
      t.same((await fixture.audited('password.breached')).map((row) => row.details.purpose), ['registration', 'change', 'reset'])

      const hash = sha1Hex(BREACHED)
      t.ok(api.requests.length >= 4, `${api.requests.length} requests`)
      for (const { url, headers } of api.requests) {
        t.match(url, /^\/range\/[0-9A-F]{5}\?mode=sha1$/, 'the prefix alone is in the request')
        t.notOk(url.includes(hash.slice(5, 10)) || JSON.stringify(headers).includes(hash.slice(5)), 'nothing of the rest of the hash')
        t.equal(headers['add-padding'], 'true', 'the answer is padded')
      }
      t.ok(api.requests.some(({ url }) => url.startsWith(`/range/${hash.slice(0, 5)}`)))
    })

    t.test('block: a password the corpus does not hold is accepted (padding entries count for nothing)', async (t) => {
      const { fixture } = await withRangeApi(t, backend.url, 'block')
      t.ok(await register(fixture, FRESH))
      t.same(await fixture.audited('password.breached'), [])
    })

    t.test('warn: a breached password is accepted and recorded', async (t) => {
      const { fixture } = await withRangeApi(t, backend.url, 'warn')
      const user = await register(fixture, BREACHED)
      t.ok(user.id)
      t.match(await fixture.audited('password.breached'), [{ outcome: 'success', details: { purpose: 'registration', mode: 'warn', occurrences: 3861 } }])
    })

    t.test('a redirect from the range API is a failure, never followed: the password passes unchecked, audited, and nothing goes elsewhere', async (t) => {
      const { api, fixture } = await withRangeApi(t, backend.url, 'block')
      const elsewhere = await pwnedPasswordsServer(t)
      elsewhere.add(BREACHED, 3861)
      api.redirectTo = elsewhere.url
      t.ok(await register(fixture, FRESH), 'accepted unchecked')
      t.equal(api.requests.length, 1, 'the configured API was asked')
      t.equal(elsewhere.requests.length, 0, 'the address it redirected to was not')
      t.match((await fixture.audited('password.breach_check_failed')).at(-1), { outcome: 'failure', details: { purpose: 'registration', reason: 'redirected' } })
    })

    t.test('off: nothing is asked', async (t) => {
      const { api, fixture } = await withRangeApi(t, backend.url, 'off')
      await register(fixture, BREACHED)
      t.equal(api.requests.length, 0)
    })
  })
}

t.test('fail open: an API that does not answer within 2 s, or cannot be reached, lets the password through, with an audit entry', async (t) => {
  const { api, fixture } = await withRangeApi(t, null, 'block')
  api.hang = true
  const started = Date.now()
  t.ok(await register(fixture, BREACHED), 'accepted unchecked')
  const took = Date.now() - started
  t.ok(took >= BREACH_CHECK_TIMEOUT_MS - 50 && took < BREACH_CHECK_TIMEOUT_MS + 1500, `gave up after ${took} ms`)
  t.match(await fixture.audited('password.breach_check_failed'), [{ outcome: 'failure', details: { purpose: 'registration', reason: `no answer within ${BREACH_CHECK_TIMEOUT_MS} ms` } }])

  await api.stop()
  t.ok(await register(fixture, BREACHED), 'accepted when the API is down')
  t.match((await fixture.audited('password.breach_check_failed')).at(-1), { details: { reason: 'unreachable' } })
})
