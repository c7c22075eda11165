import { generateSync } from 'otplib'
import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { backends } from '../../helpers/database.js'
import { actingAs, buildServices, contextFrom, owner, type ServiceFixture, unverifyAddress } from '../../helpers/services.js'

const totp = (secret: string, offset = 0) =>
  generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offset * 30 })

/** An account with TOTP on: its caller, the secret and the first backup codes. */
async function withTotp (fixture: ServiceFixture) {
  const account = await owner(fixture)
  const { secret } = await fixture.services.mfaSettings.setup(actingAs(account))
  const backupCodes = await fixture.services.mfaSettings.enable(contextFrom('198.51.100.40', account), { code: totp(secret) })
  return { account, secret, backupCodes }
}

for (const backend of backends()) {
  t.test(`MFA settings service (${backend.name})`, async (t) => {
    t.test('TOTP is turned on by a code of the pending secret, audited, with a notice and backup codes; not twice', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const context = contextFrom('198.51.100.41', account)
      await t.rejects(services.mfaSettings.enable(actingAs(account, context), { code: '000000' }), Errors.CONFLICT, 'no setup in progress')
      const { secret } = await services.mfaSettings.setup(actingAs(account))
      await t.rejects(services.mfaSettings.enable(actingAs(account, context), { code: '000000' }), Errors.INVALID_MFA_CODE)
      const backupCodes = await services.mfaSettings.enable(actingAs(account, context), { code: totp(secret) })
      t.ok(backupCodes.length > 0, 'backup codes')
      t.equal(new Set(backupCodes).size, backupCodes.length, 'all different')
      t.match(await fixture.audited('mfa.enabled'), [{ target_id: account.id, ip: '198.51.100.41', details: { method: 'totp' } }])
      await fixture.delivered()
      t.match(fixture.sent.filter((message) => message.subject.startsWith('Two-factor')), [{ to: account.email, subject: 'Two-factor authentication was enabled on your account' }])
      await t.rejects(services.mfaSettings.setup(actingAs(account)), Errors.CONFLICT, 'a second setup while on')
      t.equal((await fixture.repositories.users.findPrincipal(account.id))?.mfaEnabled, true)
    })

    t.test('turning TOTP off takes a code of the enabled factor; wrong codes count toward the lockout, which then refuses the right one', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const { account, secret } = await withTotp(fixture)
      const attacker = contextFrom('203.0.113.40', account)
      for (let n = 0; n < 5; n++) await t.rejects(services.mfaSettings.disable(actingAs(account, attacker), '000000'))
      await t.rejects(services.mfaSettings.disable(actingAs(account, attacker), totp(secret, 1)), Errors.ACCOUNT_LOCKED)
      t.ok((await fixture.audited('auth.mfa_failed')).every((row) => row.details.action === 'disable' && row.ip === '203.0.113.40'), 'each failure audited with its action')
      t.same(await fixture.audited('mfa.disabled'), [])
      t.equal((await fixture.repositories.users.findPrincipal(account.id))?.mfaEnabled, true, 'still on')
    })

    t.test('a backup code turns TOTP off, audited and noticed; then there is nothing left to turn off', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const { account, backupCodes } = await withTotp(fixture)
      const context = contextFrom('198.51.100.42', account)
      await services.mfaSettings.disable(actingAs(account, context), backupCodes[0] ?? '')
      t.match(await fixture.audited('mfa.disabled'), [{ target_id: account.id, details: { method: 'totp' } }])
      await fixture.delivered()
      t.same(fixture.sent.map((message) => message.subject).filter((subject) => subject.startsWith('Two-factor')), ['Two-factor authentication was enabled on your account', 'Two-factor authentication was disabled on your account'])
      t.equal((await fixture.repositories.users.findPrincipal(account.id))?.mfaEnabled, false)
      await t.rejects(services.mfaSettings.disable(actingAs(account, context), backupCodes[1] ?? ''), Errors.CONFLICT)
    })

    t.test('new backup codes need a TOTP code, and the old ones stop working', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const { account, secret, backupCodes } = await withTotp(fixture)
      const context = contextFrom('198.51.100.43', account)
      await t.rejects(services.mfaSettings.replaceBackupCodes(actingAs(account, context), backupCodes[0] ?? ''), Errors.INVALID_MFA_CODE, 'a backup code is not enough')
      const fresh = await services.mfaSettings.replaceBackupCodes(actingAs(account, context), totp(secret, 1))
      t.equal(fresh.length, backupCodes.length)
      t.notOk(fresh.some((code) => backupCodes.includes(code)), 'a new set')
      await t.rejects(services.mfaSettings.disable(actingAs(account, context), backupCodes[1] ?? ''), Errors.INVALID_MFA_CODE, 'an old code is refused')
      await services.mfaSettings.disable(actingAs(account, context), fresh[0] ?? '')
    })

    t.test('codes by e-mail need a verified address, by SMS a phone number; turning one on is audited', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      await unverifyAddress(fixture, account.id)
      const context = contextFrom('198.51.100.44', account)
      await t.rejects(services.mfaSettings.enableMessageFactor(actingAs(account, context), 'email', {}), Errors.EMAIL_NOT_VERIFIED)
      await t.rejects(services.mfaSettings.enableMessageFactor(actingAs(account, context), 'sms', {}), Errors.CONFLICT)
      t.same(await fixture.audited('mfa.enabled'), [])
      await fixture.repositories.users.markEmailVerified(account.id, account.email)
      await services.mfaSettings.enableMessageFactor(actingAs(account, context), 'email', {})
      t.match(await fixture.audited('mfa.enabled'), [{ target_id: account.id, details: { method: 'email' } }])
      await services.mfaSettings.disableMessageFactor(actingAs(account, context), 'email', {})
      t.match(await fixture.audited('mfa.disabled'), [{ target_id: account.id, details: { method: 'email' } }])
    })
  })
}
