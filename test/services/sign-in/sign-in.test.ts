import { generateSync } from 'otplib'
import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { MESSAGE_CODE_TTL_MS } from '../../../src/services/messaging/codes.js'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { actingAs, buildServices, contextFrom, owner, registered } from '../../helpers/services.js'

const totp = (secret: string, offset = 0) =>
  generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 })

for (const backend of backends()) {
  t.test(`sign-in service (${backend.name})`, async (t) => {
    t.test('a right password opens a session, audited with the request\'s address and user agent', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const result = await fixture.services.signIn.withPassword(contextFrom('198.51.100.7'), { email: account.email, password: TEST_PASSWORD })
      t.ok('access_token' in result && result.token_type === 'Bearer', 'a token pair')
      const [login] = await fixture.audited('auth.login')
      t.match(login, { actor_id: account.id, target_id: account.id, ip: '198.51.100.7', user_agent: 'service-test', outcome: 'success', details: { method: 'password' } })
    })

    t.test('unknown e-mail and wrong password answer alike, each audited with its reason', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const context = contextFrom('198.51.100.8')
      await t.rejects(fixture.services.signIn.withPassword(context, { email: 'nobody@example.com', password: TEST_PASSWORD }), Errors.INVALID_CREDENTIALS)
      await t.rejects(fixture.services.signIn.withPassword(context, { email: account.email, password: 'wrong-password' }), Errors.INVALID_CREDENTIALS)
      const failures = await fixture.audited('auth.login_failed')
      t.same(failures.map((row) => row.details.reason), ['unknown_email', 'wrong_password'])
      t.equal(failures[1]?.target_id, account.id)
    })

    t.test('after five wrong passwords from one address the account is locked there, for the right one too; another address still signs in', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const attacker = contextFrom('203.0.113.5')
      for (let n = 0; n < 5; n++) {
        await t.rejects(fixture.services.signIn.withPassword(attacker, { email: account.email, password: 'wrong-password' }), Errors.INVALID_CREDENTIALS)
      }
      await t.rejects(fixture.services.signIn.withPassword(attacker, { email: account.email, password: TEST_PASSWORD }), Errors.ACCOUNT_LOCKED, 'locked even for the right password')
      const owner = await fixture.services.signIn.withPassword(contextFrom('198.51.100.9'), { email: account.email, password: TEST_PASSWORD })
      t.ok('access_token' in owner, 'the owner elsewhere is not locked out')
      const locked = (await fixture.audited('auth.login_failed')).filter((row) => row.details.reason === 'locked')
      t.equal(locked.length, 1, 'the refused right password is audited as locked')
    })

    t.test('with MFA on, a password answers a challenge good once, and a wrong code counts toward the lockout', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const context = contextFrom('198.51.100.10', account)
      const { secret } = await services.mfaSettings.setup(actingAs(account))
      const [backupCode = ''] = await services.mfaSettings.enable(actingAs(account, context), { code: totp(secret) })
      await fixture.delivered()
      t.match(fixture.sent.filter((message) => message.subject.includes('Two-factor')), [{ to: account.email, subject: 'Two-factor authentication was enabled on your account' }], 'a notice goes out')

      const challenge = await services.signIn.withPassword(contextFrom('198.51.100.10'), { email: account.email, password: TEST_PASSWORD })
      if (!challenge.mfa_required) throw new Error('expected a challenge')
      t.same(challenge.methods, ['totp', 'backup_code'])
      await t.rejects(services.signIn.answerChallenge(contextFrom('198.51.100.10'), { mfa_token: challenge.mfa_token, code: '000000' }), Errors.INVALID_MFA_CODE)
      t.equal((await fixture.audited('auth.mfa_failed')).length, 1)
      const pair = await services.signIn.answerChallenge(contextFrom('198.51.100.10'), { mfa_token: challenge.mfa_token, code: totp(secret, 1) })
      t.equal(pair.token_type, 'Bearer')
      t.match((await fixture.audited('auth.login')).at(-1), { details: { method: 'mfa:totp' } })
      await t.rejects(services.signIn.answerChallenge(contextFrom('198.51.100.10'), { mfa_token: challenge.mfa_token, code: backupCode }), Errors.INVALID_TOKEN, 'the challenge was answered already')
    })

    t.test('EMAIL_VERIFICATION=required: an MFA answer is refused once the address became unverified after the challenge', async (t) => {
      const fixture = await buildServices(t, backend.url, { EMAIL_VERIFICATION: 'required' })
      const { services, repositories } = fixture
      const account = await owner(fixture)
      await repositories.users.markEmailVerified(account.id, account.email)
      const context = contextFrom('198.51.100.12', account)
      const { secret } = await services.mfaSettings.setup(actingAs(account))
      await services.mfaSettings.enable(actingAs(account, context), { code: totp(secret) })
      const challenge = await services.signIn.withPassword(contextFrom('198.51.100.12'), { email: account.email, password: TEST_PASSWORD })
      if (!challenge.mfa_required) throw new Error('expected a challenge')
      await repositories.users.update(account.id, { email: `moved-${account.email}` })
      await t.rejects(services.signIn.answerChallenge(contextFrom('198.51.100.12'), { mfa_token: challenge.mfa_token, code: totp(secret, 1) }), Errors.EMAIL_NOT_VERIFIED)
      t.same(await fixture.audited('auth.login'), [], 'no session started')
      t.match((await fixture.audited('auth.login_failed')).at(-1), { target_id: account.id, details: { reason: 'email_not_verified' } })
    })

    t.test('a sign-in code by e-mail is refused once its 5 minutes are over, and good until then', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories, clock } = fixture
      const account = await owner(fixture)
      await repositories.users.markEmailVerified(account.id, account.email)
      await services.mfaSettings.enableMessageFactor(contextFrom('198.51.100.13', account), 'email', {})
      const challenge = await services.signIn.withPassword(contextFrom('198.51.100.13'), { email: account.email, password: TEST_PASSWORD })
      if (!challenge.mfa_required) throw new Error('expected a challenge')
      await services.signIn.sendChallengeCode(contextFrom('198.51.100.13'), { mfa_token: challenge.mfa_token, method: 'email' })
      await fixture.delivered()
      const code = /\b(\d{6})\b/.exec(fixture.sent.find((message) => message.subject.includes('sign-in code'))?.text ?? '')?.[1] ?? ''
      clock.aheadMs = MESSAGE_CODE_TTL_MS + 1000
      await t.rejects(services.signIn.answerChallenge(contextFrom('198.51.100.13'), { mfa_token: challenge.mfa_token, code }), Errors.INVALID_MFA_CODE)
      t.equal((await fixture.audited('auth.mfa_failed')).length, 1, 'counted as a wrong code')
      clock.aheadMs = MESSAGE_CODE_TTL_MS - 1000
      const pair = await services.signIn.answerChallenge(contextFrom('198.51.100.13'), { mfa_token: challenge.mfa_token, code })
      t.equal(pair.token_type, 'Bearer', 'the expired attempt spent nothing')
      t.match(await fixture.audited('mfa.code_sent'), [{ actor_id: account.id, target_id: account.id, details: { method: 'email' } }])
    })

    t.test('a refresh token presented again after its successor was spent ends the session, audited as reuse', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const context = contextFrom('198.51.100.11')
      const first = await fixture.services.signIn.withPassword(context, {
        email: account.email,
        password: TEST_PASSWORD
      })
      if (!('refresh_token' in first)) throw new Error('expected a pair')
      const second = await fixture.services.signIn.refresh(context, first.refresh_token)
      t.same(await fixture.services.signIn.refresh(context, first.refresh_token), second, 'before that, a retry gets the same pair')
      const third = await fixture.services.signIn.refresh(context, second.refresh_token)
      await t.rejects(fixture.services.signIn.refresh(context, first.refresh_token), Errors.TOKEN_REUSED)
      await t.rejects(fixture.services.signIn.refresh(context, third.refresh_token), Errors.TOKEN_REUSED, 'the whole session ended')
      t.same((await fixture.audited('auth.refresh')).map((row) => JSON.stringify(row.details)), ['{}', '{"retry":true}', '{}'], 'a rotation, its retry, a rotation')
      t.ok((await fixture.audited('auth.token_reused')).length >= 1)
    })
  })
}
