import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { freePort } from '../../../bench/free-port.js'
import { TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { MailServer, mailServer, SMTP_USER, tokenIn } from '../../helpers/servers/mail-server.js'

const APP_URL = 'https://app.example.test'
const NEW_PASSWORD = 'a-brand-new-passphrase'

async function register (app: FastifyInstance, email = uniqueEmail('mail')) {
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Mail User', password: TEST_PASSWORD } })
  if (created.statusCode !== 201) throw new Error(created.body)
  return { id: created.json().data.id as string, email }
}

async function login (app: FastifyInstance, email: string, password = TEST_PASSWORD) {
  return await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
}

async function outboxRows (app: FastifyInstance) {
  return await app.database.db.selectFrom('outbox').selectAll().execute()
}

for (const backend of backends()) {
  t.test(`e-mail verification and recovery (${backend.name})`, async (t) => {
    t.test('register, verify from the delivered mail, forget, reset from the mail, sign in with the new password; older sessions are refused', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), APP_URL, MAIL_FROM: 'Accounts <accounts@example.test>' } })
      const account = await register(app)

      const verification = await smtp.next((mail) => mail.to.includes(account.email))
      t.match(verification, { from: 'accounts@example.test', subject: /^Verify your e-mail address/, secure: true, user: SMTP_USER }, 'sent over STARTTLS after AUTH')
      t.match(verification.text, `${APP_URL}/verify-email?token=`, 'the link points at the application')
      t.match(verification.html, `${APP_URL}/verify-email?token=`)
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(verification) } })
      t.equal(verified.statusCode, 200)
      t.equal(verified.json().data.email_verified, true)
      const again = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(verification) } })
      t.same(again.json(), { error: { code: 'INVALID_ONE_TIME_TOKEN', message: 'Invalid, used or expired token' } }, 'a token is good once')
      t.equal(again.statusCode, 400)

      const oldSession = (await login(app, account.email)).json().data
      const forgot = await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: account.email } })
      t.equal(forgot.statusCode, 202)
      const reset = await smtp.next((mail) => mail.to.includes(account.email))
      t.match(reset, { subject: /^Reset your/ })
      t.match(reset.text, `${APP_URL}/reset-password?token=`)

      const weak = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(reset), password: 'short' } })
      t.equal(weak.statusCode, 400, 'the policy applies')
      const done = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(reset), password: NEW_PASSWORD } })
      t.equal(done.statusCode, 204, 'a weak password did not spend the token')
      const notice = await smtp.next((mail) => mail.to.includes(account.email))
      t.match(notice, { subject: 'The password of your account was reset' })

      t.equal((await login(app, account.email)).statusCode, 401, 'the old password is gone')
      const fresh = await login(app, account.email, NEW_PASSWORD)
      t.equal(fresh.statusCode, 200, 'the new password signs in')
      const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: oldSession.refresh_token } })
      t.equal(refreshed.statusCode, 401, 'the older session ended')
      const me = await app.inject(withToken(oldSession.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal(me.statusCode, 401, 'and its access token with it')
      const audit = await app.database.db.selectFrom('audit_logs').select('event').where('target_id', '=', account.id).execute()
      for (const event of ['email.verification_sent', 'email.verified', 'auth.password_reset_requested', 'auth.password_reset']) {
        t.ok(audit.some((entry) => entry.event === event), `audited: ${event}`)
      }
    })

    t.test('a reset ends every other reset token; tokens of the wrong kind, reused or made up are refused and change nothing', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const account = await register(app)
      const verification = tokenIn(await smtp.next((mail) => mail.subject.startsWith('Verify')))
      for (let n = 0; n < 2; n++) await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: account.email } })
      const [first, second] = [await smtp.next((mail) => mail.subject.startsWith('Reset')), await smtp.next((mail) => mail.subject.startsWith('Reset'))]
      const wrongKind = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: verification, password: NEW_PASSWORD } })
      t.equal(wrongKind.json().error.code, 'INVALID_ONE_TIME_TOKEN', 'a verification token does not reset a password')
      const resetAsVerification = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(first) } })
      t.equal(resetAsVerification.json().error.code, 'INVALID_ONE_TIME_TOKEN', 'nor a reset token verify an address')
      for (const token of ['x', 'A'.repeat(43), `${tokenIn(first)}x`, 'not a token at all \u202E']) {
        const response = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token, password: NEW_PASSWORD } })
        t.equal(response.json().error.code, 'INVALID_ONE_TIME_TOKEN', `made up: ${JSON.stringify(token)}`)
      }
      t.equal((await login(app, account.email)).statusCode, 200, 'the password is unchanged')
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(second), password: NEW_PASSWORD } })).statusCode, 204)
      const stale = await app.inject({ method: 'POST', url: '/api/v1/auth/password/reset', payload: { token: tokenIn(first), password: 'yet-another-passphrase' } })
      t.equal(stale.json().error.code, 'INVALID_ONE_TIME_TOKEN', 'the other reset token stopped working')
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: verification } })).statusCode, 200, 'the verification token was not spent by the wrong-kind attempt')
    })

    t.test('forgot-password answers alike for unknown addresses, sends at most 3 messages per account per hour', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), EMAIL_VERIFICATION: 'off' } })
      const account = await register(app)
      const answers = []
      for (let n = 0; n < 5; n++) {
        answers.push(await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: n % 2 === 0 ? account.email : uniqueEmail('nobody') } }))
      }
      t.same(new Set(answers.map((answer) => answer.body)).size, 1, 'one body for known and unknown addresses')
      t.same(new Set(answers.map((answer) => answer.statusCode)), new Set([202]))
      for (let n = 0; n < 2; n++) await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: account.email } })
      await app.services.outbox.deliverDue()
      for (let n = 0; n < 3; n++) await smtp.next((mail) => mail.to.includes(account.email))
      t.equal(smtp.received.length, 0, 'the fourth and fifth requests within the hour sent nothing')
      const refused = await app.database.db.selectFrom('audit_logs').selectAll().where('event', '=', 'auth.password_reset_requested').where('outcome', '=', 'failure').execute()
      t.equal(refused.filter((entry) => entry.details.includes('too_many_requests')).length, 2)
      t.equal(refused.filter((entry) => entry.details.includes('unknown_email')).length, 2)
    })

    t.test('the answer to forgot-password takes about as long for an unknown address as for a known one', async (t) => {
      const app = await build(t, { postgresUrl: backend.url, env: { EMAIL_VERIFICATION: 'off' } })
      // An account each, so that every known address is under its hourly limit and gets a token.
      const accounts: Array<Awaited<ReturnType<typeof register>>> = []
      // In eights: the password hashing queue answers 503 beyond its length.
      while (accounts.length < 200) {
        accounts.push(...await Promise.all(Array.from({ length: 8 }, async () => await register(app))))
      }
      const times = { known: [] as number[], unknown: [] as number[] }
      for (let n = 0; n < 400; n++) {
        const kind = n % 2 === 0 ? 'known' : 'unknown'
        const started = process.hrtime.bigint()
        const response = await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: kind === 'known' ? accounts[n / 2]?.email : `nobody-${n}@example.com` } })
        times[kind].push(Number(process.hrtime.bigint() - started) / 1e6)
        if (response.statusCode !== 202) throw new Error(response.body)
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
      const difference = Math.abs(median(times.known) - median(times.unknown))
      t.ok(difference < 5, `medians differ by ${difference.toFixed(3)} ms over 200 requests each (known ${median(times.known).toFixed(3)}, unknown ${median(times.unknown).toFixed(3)})`)
      const issued = await app.database.db.selectFrom('one_time_tokens').select((eb) => eb.fn.countAll().as('count')).where('purpose', '=', 'password_reset').executeTakeFirstOrThrow()
      t.equal(Number(issued.count), 200, 'every known address was sent a link')
    })

    t.test('with the SMTP server down at first, the answer is still 202 and the message arrives once it is up, once', async (t) => {
      const port = await freePort()
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: `smtp://mailer:mailer-password@127.0.0.1:${port}?tls.rejectUnauthorized=false`, MAIL_RETRY_MS: '50', EMAIL_VERIFICATION: 'off' } })
      const account = await register(app)
      const forgot = await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: account.email } })
      t.equal(forgot.statusCode, 202)
      t.match(await outboxRows(app), [{ recipient: account.email, subject: /^Reset your/ }], 'the message was stored before the answer')
      const tokens = await app.database.db.selectFrom('one_time_tokens').select('purpose').where('user_id', '=', account.id).execute()
      t.same(tokens, [{ purpose: 'password_reset' }], 'and its token')
      await app.services.outbox.deliverDue()
      const [waiting] = await outboxRows(app)
      t.match(waiting, { attempts: 1, last_error: /ECONNREFUSED|connect/ }, 'the first try failed and is kept for another')
      const smtp = await mailServer(t, port)
      const delivered = await smtp.next()
      t.match(delivered, { to: [account.email], subject: /^Reset your/ })
      await app.services.outbox.deliverDue()
      t.same(await outboxRows(app), [], 'delivered once: nothing is left to send again')
      t.equal(smtp.received.length, 0)
    })

    t.test('certificates are checked unless the URL says otherwise: a self-signed server gets nothing', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: `smtp://mailer:mailer-password@127.0.0.1:${smtp.port}`, EMAIL_VERIFICATION: 'off' } })
      const account = await register(app)
      await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: account.email } })
      await app.services.outbox.deliverDue()
      const [waiting] = await outboxRows(app)
      t.match(waiting, { attempts: 1, last_error: /certificate/i })
      t.equal(smtp.received.length, 0)
    })

    t.test('an e-mail change unverifies the address, sends a verification to the new one and a notice to the old', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const account = await register(app)
      const token = tokenIn(await smtp.next((mail) => mail.to.includes(account.email)))
      await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token } })
      const { access_token: accessToken } = (await login(app, account.email)).json().data
      const newEmail = uniqueEmail('moved')
      // A new address is a sensitive change: the password goes with it (docs/security.md, "Sensitive changes").
      const changed = await app.inject(withToken(accessToken, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { email: newEmail, current_password: TEST_PASSWORD } }))
      t.equal(changed.statusCode, 200)
      t.equal(changed.json().data.email_verified, false)
      t.match(await smtp.next((mail) => mail.to.includes(account.email)), { subject: 'The e-mail address of your account was changed' })
      const verification = await smtp.next((mail) => mail.to.includes(newEmail))
      t.match(verification, { subject: /^Verify/ })
      const changedEntries = await app.database.db.selectFrom('audit_logs').select(['actor_id', 'details']).where('event', '=', 'email.changed').where('target_id', '=', account.id).execute()
      t.equal(changedEntries.length, 1, 'audited: email.changed')
      t.same(JSON.parse(changedEntries[0]?.details ?? '{}'), { previous: account.email, current: newEmail }, 'with both addresses')
      t.equal(changedEntries[0]?.actor_id, account.id)
      const same = await app.inject(withToken(accessToken, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { email: newEmail.toUpperCase(), name: 'Renamed' } }))
      t.equal(same.statusCode, 200)
      await app.services.outbox.deliverDue()
      t.equal(smtp.received.length, 0, 'the same address again sends nothing')
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(verification) } })
      t.match(verified.json().data, { email: newEmail, email_verified: true })
      const resend = await app.inject(withToken(accessToken, { method: 'POST', url: '/api/v1/auth/email/verification' }))
      t.equal(resend.statusCode, 202)
      await app.services.outbox.deliverDue()
      t.equal(smtp.received.length, 0, 'a verified address is sent nothing')
    })

    t.test('EMAIL_VERIFICATION=required: an unverified account is refused after its password is checked', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), EMAIL_VERIFICATION: 'required' } })
      const account = await register(app)
      t.equal((await login(app, account.email, 'wrong-password')).statusCode, 401, 'a wrong password is still a wrong password')
      const refused = await login(app, account.email)
      t.equal(refused.statusCode, 403)
      t.same(refused.json(), { error: { code: 'EMAIL_NOT_VERIFIED', message: 'E-mail address not verified' } })
      await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(await smtp.next()) } })
      t.equal((await login(app, account.email)).statusCode, 200)
    })

    t.test('header injection and oversized input: a clear 400, nothing stored, nothing sent', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const attempts = [
        { email: uniqueEmail('crlf'), name: 'Eve\r\nBcc: victim@example.com', password: TEST_PASSWORD },
        { email: 'eve@example.com\r\nBcc: victim@example.com', name: 'Eve', password: TEST_PASSWORD },
        { email: `${'a'.repeat(250)}@example.com`, name: 'Eve', password: TEST_PASSWORD },
        { email: uniqueEmail('long'), name: 'E'.repeat(101), password: TEST_PASSWORD }
      ]
      for (const payload of attempts) {
        const response = await app.inject({ method: 'POST', url: '/api/v1/users', payload })
        t.equal(response.statusCode, 400, JSON.stringify(payload).slice(0, 80))
        t.equal(response.json().error.code, 'VALIDATION_FAILED')
      }
      const forgot = await app.inject({ method: 'POST', url: '/api/v1/auth/password/forgot', payload: { email: 'eve@example.com\nBcc: victim@example.com' } })
      t.equal(forgot.statusCode, 400)
      for (const [url, extra] of [['/api/v1/auth/email/verify', {}], ['/api/v1/auth/password/reset', { password: NEW_PASSWORD }]] as const) {
        const tooLong = await app.inject({ method: 'POST', url, payload: { token: 'A'.repeat(257), ...extra } })
        t.equal(tooLong.statusCode, 400, `${url}: a token over 256 characters`)
        t.match(tooLong.json(), { error: { code: 'VALIDATION_FAILED', details: [{ path: '/token', message: /256/ }] } }, 'says which field, and why')
        t.equal(tooLong.json().error.details.length, 1)
      }
      await app.services.outbox.deliverDue()
      t.equal(smtp.received.length, 0, 'nothing sent')
      t.same(await app.database.db.selectFrom('users').select('id').execute(), [], 'nothing stored')
    })

    t.test('an e-mail change with CR or LF in the address is refused: nothing changed, nothing sent', async (t) => {
      const smtp = await mailServer(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const account = await register(app)
      await smtp.next((mail) => mail.to.includes(account.email))
      const { access_token: accessToken } = (await login(app, account.email)).json().data
      for (const email of [`${account.email}\r\nBcc: victim@example.com`, 'eve@example.com\nBcc: victim@example.com', 'eve@example.com\r']) {
        const changed = await app.inject(withToken(accessToken, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { email } }))
        t.equal(changed.statusCode, 400, JSON.stringify(email))
        t.match(changed.json(), { error: { code: 'VALIDATION_FAILED', details: [{ path: '/email' }] } })
      }
      const user = await app.inject(withToken(accessToken, { method: 'GET', url: `/api/v1/users/${account.id}` }))
      t.equal(user.json().data.email, account.email, 'the address is unchanged')
      await app.services.outbox.deliverDue()
      t.same(await outboxRows(app), [], 'nothing waits to be sent')
      t.equal(smtp.received.length, 0, 'nothing sent')
    })

    t.test('delivery over smtps:// (TLS from the first byte), with AUTH', async (t) => {
      const smtp = await new MailServer({ secure: true }).start()
      t.teardown(async () => { await smtp.stop() })
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      t.match(smtp.url(), /^smtps:\/\//)
      const account = await register(app)
      const verification = await smtp.next((mail) => mail.to.includes(account.email))
      t.match(verification, { subject: /^Verify your e-mail address/, secure: true, user: SMTP_USER }, 'received over TLS, after AUTH')
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token: tokenIn(verification) } })
      t.equal(verified.statusCode, 200, 'its token verifies the address')
    })
  })
}
