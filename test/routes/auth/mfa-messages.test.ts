import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import type { TestContext } from '../../helpers/context.js'
import { backends } from '../../helpers/database.js'
import { MailServer, SmsWebhook, tokenIn } from '../../helpers/servers/mail-server.js'

const codeIn = (text: string) => {
  const code = /\b(\d{6})\b/.exec(text)?.[1]
  if (code === undefined) throw new Error(`no code in "${text}"`)
  return code
}

async function servers (t: TestContext) {
  const smtp = await new MailServer().start()
  const sms = await new SmsWebhook().start()
  t.teardown(async () => {
    await smtp.stop()
    await sms.stop()
  })
  return { smtp, sms }
}

/** The details of the audit entries of `event` about `userId`, oldest first. */
async function audited (app: FastifyInstance, event: string, userId: string) {
  const rows = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', event).where('target_id', '=', userId).orderBy('created_at').orderBy('id').execute()
  return rows.map((row) => JSON.parse(row.details) as Record<string, unknown>)
}

/**
 * A registered account with its address verified from the delivered mail, signed in, its
 * session stepped up with the password: turning factors on and off are sensitive changes.
 */
async function verifiedAccount (app: FastifyInstance, smtp: MailServer) {
  const email = uniqueEmail('factor')
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Factor User', password: TEST_PASSWORD } })
  const id = created.json().data.id as string
  const token = tokenIn(await smtp.next((mail) => mail.to.includes(email)))
  await app.inject({ method: 'POST', url: '/api/v1/auth/email/verify', payload: { token } })
  const signedIn = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })
  const accessToken = signedIn.json().data.access_token as string
  await app.inject(withToken(accessToken, { method: 'POST', url: '/api/v1/auth/reauthenticate', payload: { password: TEST_PASSWORD } }))
  return { id, email, accessToken }
}

for (const backend of backends()) {
  t.test(`second factors by message (${backend.name})`, async (t) => {
    t.test('e-mail codes: on for a verified address, offered by the challenge, good once, wrong ones counted', async (t) => {
      const { smtp, sms } = await servers(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), SMS_WEBHOOK_URL: sms.url } })
      const account = await verifiedAccount(app, smtp)
      const enabled = await app.inject(withToken(account.accessToken, { method: 'POST', url: '/api/v1/auth/mfa/email/enable' }))
      t.equal(enabled.statusCode, 204)
      t.match(await smtp.next((mail) => mail.to.includes(account.email)), { subject: 'Two-factor authentication was enabled on your account' })
      const me = await app.inject(withToken(account.accessToken, { method: 'GET', url: '/api/v1/auth/me' }))
      t.match(me.json().data, { mfa_enabled: true, mfa_methods: ['email'] })

      const challenge = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      t.match(challenge, { mfa_required: true, methods: ['email'] })
      const sent = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: challenge.mfa_token, method: 'email' } })
      t.equal(sent.statusCode, 202)
      const code = codeIn((await smtp.next((mail) => mail.subject.includes('sign-in code'))).text)
      const wrong = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: code === '000000' ? '111111' : '000000' } })
      t.equal(wrong.json().error.code, 'INVALID_MFA_CODE')
      const failures = await app.database.db.selectFrom('sign_in_failures').selectAll().where('user_id', '=', account.id).execute()
      t.equal(failures.length, 1, 'a wrong code counts toward the lockout')
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code } })
      t.equal(verified.statusCode, 200)
      t.equal(verified.json().data.token_type, 'Bearer')

      const second = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const replay = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: second.mfa_token, code } })
      t.equal(replay.json().error.code, 'INVALID_MFA_CODE', 'a code is good for its own challenge, once')
      const smsRefused = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: second.mfa_token, method: 'sms' } })
      t.equal(smsRefused.statusCode, 409, 'SMS is not on')
      t.same(sms.received, [])
      const login = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.login').where('target_id', '=', account.id).execute()
      t.ok(login.some((entry) => entry.details.includes('mfa:email')), 'the sign-in is audited with its method')
      t.same(await audited(app, 'mfa.code_sent', account.id), [{ method: 'email' }], 'the code sent is audited with its method')

      t.equal((await app.inject({ method: 'DELETE', url: '/api/v1/auth/mfa/email' })).statusCode, 401, 'turning codes off needs the account\'s token')
      // Turning codes off is a sensitive change: a code sent for it is the proof (docs/api.md, "Step-up").
      const signedIn = verified.json().data.access_token
      t.equal((await app.inject(withToken(signedIn, { method: 'DELETE', url: '/api/v1/auth/mfa/email' }))).statusCode, 403, 'not with the token alone')
      await app.inject(withToken(signedIn, { method: 'POST', url: '/api/v1/auth/reauthenticate/code', payload: { method: 'email' } }))
      const proof = codeIn((await smtp.next((mail) => mail.to.includes(account.email))).text)
      const off = await app.inject(withToken(signedIn, { method: 'DELETE', url: '/api/v1/auth/mfa/email', payload: { mfa_code: proof } }))
      t.equal(off.statusCode, 204)
      t.match(await smtp.next((mail) => mail.to.includes(account.email)), { subject: 'Two-factor authentication was disabled on your account' }, 'a notice goes out')
      t.same(await audited(app, 'mfa.disabled', account.id), [{ method: 'email' }])
      const plain = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })
      t.ok('access_token' in plain.json().data, 'sign-in needs no code any more')
    })

    t.test('SMS codes go to the account\'s phone through the webhook; a new number turns them off', async (t) => {
      const { smtp, sms } = await servers(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url(), SMS_WEBHOOK_URL: sms.url } })
      const account = await verifiedAccount(app, smtp)
      const noPhone = await app.inject(withToken(account.accessToken, { method: 'POST', url: '/api/v1/auth/mfa/sms/enable' }))
      t.equal(noPhone.statusCode, 409, 'no number yet')
      const phone = await app.inject(withToken(account.accessToken, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { phone: '+15555550123' } }))
      t.equal(phone.statusCode, 200)
      t.notOk('phone' in phone.json().data, 'the number is not in the public user')
      t.equal((await app.inject(withToken(account.accessToken, { method: 'POST', url: '/api/v1/auth/mfa/sms/enable' }))).statusCode, 204)

      const challenge = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      t.same(challenge.methods, ['sms'])
      t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: challenge.mfa_token, method: 'sms' } })).statusCode, 202)
      const message = await sms.next()
      t.equal(message.to, '+15555550123')
      const verified = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge.mfa_token, code: codeIn(message.body) } })
      t.equal(verified.statusCode, 200)

      // A new number is a sensitive change: the code-verified session has not stepped up, the first one has.
      const unproved = await app.inject(withToken(verified.json().data.access_token, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { phone: '+15555550199' } }))
      t.equal(unproved.json().error.code, 'REAUTHENTICATION_REQUIRED')
      const moved = await app.inject(withToken(account.accessToken, { method: 'PATCH', url: `/api/v1/users/${account.id}`, payload: { phone: '+15555550199' } }))
      t.equal(moved.statusCode, 200)
      const plain = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })
      t.ok('access_token' in plain.json().data, 'a new number turned SMS codes off: sign-in needs no code until they are on again')
      t.same(await audited(app, 'mfa.code_sent', account.id), [{ method: 'sms' }], 'the code sent is audited with its method')

      const accessToken = plain.json().data.access_token as string
      t.equal((await app.inject(withToken(accessToken, { method: 'POST', url: '/api/v1/auth/mfa/sms/enable', payload: { current_password: TEST_PASSWORD } }))).statusCode, 204)
      t.same((await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data.methods, ['sms'], 'on again for the new number')
      t.equal((await app.inject({ method: 'DELETE', url: '/api/v1/auth/mfa/sms' })).statusCode, 401, 'turning codes off needs the account\'s token')
      const off = await app.inject(withToken(account.accessToken, { method: 'DELETE', url: '/api/v1/auth/mfa/sms' }))
      t.equal(off.statusCode, 204)
      const me = await app.inject(withToken(accessToken, { method: 'GET', url: '/api/v1/auth/me' }))
      t.match(me.json().data, { mfa_enabled: false, mfa_methods: [] })
      t.same((await audited(app, 'mfa.disabled', account.id)).at(-1), { method: 'sms' })
      const withoutCode = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })
      t.ok('access_token' in withoutCode.json().data, 'sign-in needs no code any more')
      t.same(sms.received, [], 'and no SMS was sent for it')
    })

    t.test('e-mail codes need a verified address; a challenge gets at most five codes', async (t) => {
      const { smtp } = await servers(t)
      const app = await build(t, { postgresUrl: backend.url, env: { SMTP_URL: smtp.url() } })
      const email = uniqueEmail('unverified')
      await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Unverified', password: TEST_PASSWORD } })
      const token = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })).json().data.access_token
      const refused = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/mfa/email/enable' }))
      t.equal(refused.statusCode, 403)
      t.equal(refused.json().error.code, 'EMAIL_NOT_VERIFIED')

      const account = await verifiedAccount(app, smtp)
      await app.inject(withToken(account.accessToken, { method: 'POST', url: '/api/v1/auth/mfa/email/enable' }))
      const challenge = (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })).json().data
      const statuses = []
      for (let n = 0; n < 6; n++) {
        statuses.push((await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: challenge.mfa_token, method: 'email' } })).statusCode)
      }
      t.same(statuses, [202, 202, 202, 202, 202, 409])
    })
  })
}
