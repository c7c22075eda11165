import t from 'tap'
import { claimsOf, createAccount, providerSignIn, TEST_PASSWORD, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { mailServer, SmsWebhook } from '../../helpers/servers/mail-server.js'
import { providerFor } from '../../helpers/servers/oauth-provider.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

const REDIRECT = 'http://127.0.0.1:3000/callback'

/** What an access token says of its sign-in: how (`amr`, RFC 8176) and when (`auth_time`). */
function proved (accessToken: string) {
  const { amr, auth_time: authTime } = claimsOf(accessToken)
  return { amr, recent: typeof authTime === 'number' && Math.abs(authTime - Date.now() / 1000) < 60 }
}

function codeIn (text: string): string {
  const code = /\b(\d{6})\b/.exec(text)?.[1]
  if (code === undefined) throw new Error(`no code in "${text}"`)
  return code
}

for (const backend of backends()) {
  t.test(`how a sign-in was proved (${backend.name})`, async (t) => {
    t.test('amr says how the sign-in was proved: pwd, fed for a provider, hwk (with user and mfa when the authenticator verified the user) for a passkey, otp or sms after a code by message', async (t) => {
      const smtp = await mailServer(t)
      const sms = await new SmsWebhook().start()
      t.teardown(async () => { await sms.stop() })
      const { provider, env } = await providerFor(t, 'microsoft', REDIRECT)
      const app = await build(t, {
        postgresUrl: backend.url, env: { ...env, SMTP_URL: smtp.url(), SMS_WEBHOOK_URL: sms.url }
      })
      const login = async (email: string) =>
        (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: TEST_PASSWORD } })).json().data

      const federated = await providerSignIn(app, provider, { sub: 'amr-subject', email: uniqueEmail('federated'), email_verified: true })
      t.same(proved(federated.json().data.access_token), { amr: ['fed'], recent: true }, 'a provider\'s sign-in')

      const account = await createAccount(app)
      t.same(proved(account.token), { amr: ['pwd'], recent: true }, 'a password')
      const authenticator = new SoftwareAuthenticator()
      const creation = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/passkeys/registration/options' }))
      const registered = await app.inject(withToken(account.token, {
        method: 'POST', url: '/api/v1/auth/passkeys', payload: { response: authenticator.register(creation.json().data) }
      }))
      t.equal(registered.statusCode, 201)
      for (const [userVerified, amr] of [[true, ['hwk', 'user', 'mfa']], [false, ['hwk']]] as const) {
        const options = await app.inject({ method: 'POST', url: '/api/v1/auth/passkeys/authentication/options', payload: {} })
        const { challenge_id: challengeId, options: requestOptions } = options.json().data
        const signedIn = await app.inject({
          method: 'POST',
          url: '/api/v1/auth/passkeys/authentication',
          payload: { challenge_id: challengeId, response: authenticator.assert(requestOptions, { userVerified }) }
        })
        t.same(proved(signedIn.json().data.access_token), { amr, recent: true }, `a passkey, user verified: ${String(userVerified)}`)
      }

      const factors = await createAccount(app)
      const phone = await app.inject(withToken(factors.token, { method: 'PATCH', url: `/api/v1/users/${factors.id}`, payload: { phone: '+15555550170' } }))
      t.equal(phone.statusCode, 200)
      for (const factor of ['email', 'sms'] as const) {
        const enabled = await app.inject(withToken(factors.token, { method: 'POST', url: `/api/v1/auth/mfa/${factor}/enable` }))
        t.equal(enabled.statusCode, 204, `codes by ${factor} on`)
      }
      const byMail = await login(factors.email)
      t.same(byMail.methods, ['email', 'sms'])
      await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: byMail.mfa_token, method: 'email' } })
      const mail = await smtp.next((message) => message.to.includes(factors.email) && message.subject.endsWith('sign-in code'))
      const mailed = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: byMail.mfa_token, code: codeIn(mail.text) } })
      t.same(proved(mailed.json().data.access_token), { amr: ['pwd', 'otp', 'mfa'], recent: true }, 'a password and a code by e-mail (RFC 8176 has no e-mail value: otp)')

      const bySms = await login(factors.email)
      await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/challenge', payload: { mfa_token: bySms.mfa_token, method: 'sms' } })
      const text = await sms.next()
      t.equal(text.to, '+15555550170')
      const texted = await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: bySms.mfa_token, code: codeIn(text.body) } })
      t.same(proved(texted.json().data.access_token), { amr: ['pwd', 'sms', 'mfa'], recent: true }, 'a password and a code by SMS')
    })
  })
}
