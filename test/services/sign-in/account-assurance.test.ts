import { generateSync } from 'otplib'
import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { REAUTHENTICATION_TTL_MS } from '../../../src/services/sign-in/reauthentication.js'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import {
  actingAs, buildServices, callerOfPrincipal, contextFrom, googleTestProvider, owner, providerSignIn,
  type ServiceFixture,
  tokenSent
} from '../../helpers/services.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

const totp = (secret: string) => generateSync({ secret })
const MINUTE = 60_000

/**
 * An account registered through the service and never verified (unclaimed), with everything
 * an earlier version let a first registrant attach: a linked identity, a passkey, TOTP and
 * backup codes, SMS codes and a phone number, a trusted device, and an open session.
 */
async function unclaimedWithAttachments (fixture: ServiceFixture) {
  const { services, repositories, audit } = fixture
  const email = uniqueEmail('unclaimed')
  const context = contextFrom('203.0.113.9')
  const user = await services.accounts.register(context, { email, name: 'First Registrant', password: TEST_PASSWORD })
  await repositories.identities.link('github', `attacker-${user.id}`, user.id, email)
  await repositories.passkeys.add(user.id, { credentialId: `credential-${user.id}`, publicKey: 'AAAA', counter: 0, transports: [], name: 'Attacker key' })
  await repositories.mfa.enable(user.id, 'sealed-secret', ['hash-1', 'hash-2'], new Date().toISOString())
  await repositories.users.update(user.id, { phone: '+15555550100' })
  await repositories.users.setMessageFactor(user.id, 'sms', new Date().toISOString())
  await repositories.devices.add(user.id, 'attacker-device', 'Attacker laptop')
  const pair = await services.sessions.start(await principalOf(fixture, user.id), undefined, ['pwd'], audit.recorded(context, [{ event: 'auth.login', outcome: 'success', actorId: user.id, targetId: user.id }]))
  return { user, email, pair }
}

/** What is still attached to the account. */
async function attachments ({ database }: ServiceFixture, userId: string) {
  const { db } = database
  const count = async (table: 'user_identities' | 'passkeys' | 'mfa_backup_codes' | 'trusted_devices') =>
    (await db.selectFrom(table).select('user_id').where('user_id', '=', userId).execute()).length
  const user = await db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirstOrThrow()
  const live = await db.selectFrom('sessions').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null).execute()
  return {
    identities: await count('user_identities'),
    passkeys: await count('passkeys'),
    backupCodes: await count('mfa_backup_codes'),
    devices: await count('trusted_devices'),
    totp: user.totp_enabled_at !== null,
    sms: user.mfa_sms_enabled_at !== null,
    phone: user.phone,
    password: user.password_hash !== null,
    liveSessions: live.length
  }
}

async function principalOf ({ repositories }: ServiceFixture, id: string) {
  const principal = await repositories.users.findPrincipal(id)
  if (principal === undefined) throw new Error('no such account')
  return principal
}

const NOTHING_LEFT = {
  identities: 0, passkeys: 0, backupCodes: 0, devices: 0, totp: false, sms: false, phone: null, liveSessions: 0
}

for (const backend of backends()) {
  t.test(`account claiming (${backend.name})`, async (t) => {
    t.test('a verification link claims the account: what was attached before is removed in its transaction, sessions end, the owner is told', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const { user, email, pair } = await unclaimedWithAttachments(fixture)
      t.equal((await repositories.users.findPrincipal(user.id))?.claimed, false, 'unclaimed before')
      const token = await tokenSent(fixture, email, 'Verify')
      await services.emailVerification.verify(contextFrom('192.0.2.30'), token)
      t.match(await attachments(fixture, user.id), { ...NOTHING_LEFT, password: true }, 'the registrant\'s password stays: the link proves the one who registered it')
      t.equal((await repositories.users.findPrincipal(user.id))?.claimed, true)
      await t.rejects(services.signIn.refresh(contextFrom('192.0.2.30'), pair.refresh_token), Errors.INVALID_TOKEN, 'the session open before is over')
      await fixture.delivered()
      const notice = fixture.sent.find((mail) => mail.to === email && mail.subject === 'Your e-mail address was confirmed for your account')
      t.match(notice?.text, /1 linked sign-in provider\(s\), 1 passkey\(s\), the authenticator app \(TOTP\) and its backup codes, sign-in codes by SMS and the phone number, 1 trusted device\(s\)/)
      t.match(await fixture.audited('account.claimed'), [{ target_id: user.id, details: { identities: 1, webauthn_credentials: 1, authenticator_app: true, message_factors: ['sms'], trusted_devices: 1, credential_removed: false } }])

      const second = await tokenSent(fixture, email, 'Verify').catch(() => null)
      t.equal(second, token, 'no new verification was sent')
      await repositories.identities.link('github', `later-${user.id}`, user.id, email)
      await repositories.users.markEmailVerified(user.id, email)
      t.equal((await attachments(fixture, user.id)).identities, 1, 'a claimed account keeps what its owner attaches later')
    })

    t.test('a reset claims it too: the new password replaces the first registrant\'s, and an MFA challenge from before is refused', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const email = uniqueEmail('reset-claim')
      const context = contextFrom('203.0.113.10')
      const user = await services.accounts.register(context, { email, name: 'First Registrant', password: TEST_PASSWORD })
      await repositories.mfa.enable(user.id, 'sealed-secret', ['hash-1'], new Date().toISOString())
      const challenge = await services.signIn.withPassword(context, { email, password: TEST_PASSWORD })
      t.equal(challenge.mfa_required, true, 'the first registrant\'s factor asks for a code')
      await services.passwordReset.requestReset(contextFrom('192.0.2.31'), { email })
      await services.passwordReset.reset(contextFrom('192.0.2.31'), { token: await tokenSent(fixture, email, 'Reset'), password: 'owner-new-password' })
      t.match(await attachments(fixture, user.id), { ...NOTHING_LEFT, password: true })
      await t.rejects(services.signIn.withPassword(context, { email, password: TEST_PASSWORD }), Errors.INVALID_CREDENTIALS, 'the registrant\'s password is gone')
      if (challenge.mfa_required) {
        await t.rejects(services.signIn.answerChallenge(context, { mfa_token: challenge.mfa_token, code: '000000' }), Errors.INVALID_TOKEN, 'the challenge ended with the old password')
      }
      const owner = await services.signIn.withPassword(contextFrom('192.0.2.31'), { email, password: 'owner-new-password' })
      t.equal(owner.mfa_required, false, 'the owner signs in with no factor of the registrant\'s')
    })

    t.test('a new password ends the MFA challenges the old one opened', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const account = await owner(fixture)
      await repositories.mfa.enable(account.id, 'sealed-secret', ['hash-1'], new Date().toISOString())
      const stolen = await services.signIn.withPassword(contextFrom('203.0.113.11'), { email: account.email, password: TEST_PASSWORD })
      if (!stolen.mfa_required) throw new Error('expected a challenge')
      await services.accounts.update(contextFrom('192.0.2.32', account), account.id, { password: 'a-new-password-1', current_password: TEST_PASSWORD })
      await t.rejects(services.signIn.sendChallengeCode(contextFrom('203.0.113.11'), { mfa_token: stolen.mfa_token, method: 'email' }), Errors.INVALID_TOKEN)
      await t.rejects(services.signIn.answerChallenge(contextFrom('203.0.113.11'), { mfa_token: stolen.mfa_token, code: '000000' }), Errors.INVALID_TOKEN)
    })

    t.test('an unclaimed account enrols no second factor and no passkey (403 EMAIL_NOT_VERIFIED), with EMAIL_VERIFICATION off, optional or required', async (t) => {
      for (const mode of ['off', 'optional', 'required'] as const) {
        const fixture = await buildServices(t, backend.url, { EMAIL_VERIFICATION: mode })
        const { services, repositories, audit } = fixture
        const email = uniqueEmail('unclaimed')
        const context = contextFrom('203.0.113.12')
        const user = await services.accounts.register(context, { email, name: 'Unclaimed', password: TEST_PASSWORD })
        if (mode === 'required') {
          await t.rejects(services.signIn.withPassword(context, { email, password: TEST_PASSWORD }), Errors.EMAIL_NOT_VERIFIED, 'required: no sign-in')
        }
        // A session however it was had (under `required`, one from before the mode): the rule holds in the services.
        const principal = await principalOf(fixture, user.id)
        const pair = await services.sessions.start(principal, undefined, ['pwd'], audit.recorded(context, []))
        const caller = callerOfPrincipal(principal, pair.access_token)
        await services.reauthentication.reauthenticate(contextFrom('203.0.113.12', caller), { password: TEST_PASSWORD })
        await t.rejects(services.mfaSettings.setup(actingAs(caller)), Errors.EMAIL_NOT_VERIFIED, `${mode}: TOTP set-up`)
        await t.rejects(services.mfaSettings.enable(actingAs(caller, context), { code: '000000' }), Errors.EMAIL_NOT_VERIFIED, `${mode}: TOTP`)
        await t.rejects(services.passkeys.registrationOptions(actingAs(caller)), Errors.EMAIL_NOT_VERIFIED, `${mode}: passkey options`)
        await t.rejects(services.passkeys.register(actingAs(caller, context), { response: {} as never }), Errors.EMAIL_NOT_VERIFIED, `${mode}: a passkey`)
        await repositories.users.update(user.id, { phone: '+15555550101' })
        for (const factor of ['sms', 'email'] as const) {
          await t.rejects(services.mfaSettings.enableMessageFactor(actingAs(caller, context), factor, {}), Errors.EMAIL_NOT_VERIFIED, `${mode}: codes by ${factor}`)
        }
        t.match(await repositories.users.findPrincipal(user.id), { mfaEnabled: false, hasPasskey: false, messageFactors: [] }, `${mode}: nothing enrolled`)
      }
    })

    t.test('ADMIN_EMAIL: an unclaimed account is claimed for the operator (password ADMIN_PASSWORD, the rest removed) before it is promoted', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const { user, email, pair } = await unclaimedWithAttachments(fixture)
      const outcome = await services.accounts.ensureSuperAdmin(contextFrom('start-up'), email, 'operator-chosen-password')
      t.equal(outcome, 'claimed')
      t.match(await attachments(fixture, user.id), { ...NOTHING_LEFT, password: true })
      t.same((await repositories.users.findPrincipal(user.id))?.roles.sort(), ['super_admin', 'user'])
      await t.rejects(services.signIn.withPassword(contextFrom('203.0.113.9'), { email, password: TEST_PASSWORD }), Errors.INVALID_CREDENTIALS, 'the registrant\'s password no longer signs in')
      await t.rejects(services.signIn.refresh(contextFrom('203.0.113.9'), pair.refresh_token), Errors.INVALID_TOKEN)
      t.equal((await services.signIn.withPassword(contextFrom('192.0.2.33'), { email, password: 'operator-chosen-password' })).mfa_required, false)
      t.equal(await services.accounts.ensureSuperAdmin(contextFrom('start-up'), email, 'another-password'), 'existing', 'a claimed account keeps its password')
      t.equal((await services.signIn.withPassword(contextFrom('192.0.2.33'), { email, password: 'operator-chosen-password' })).mfa_required, false)
    })

    t.test('the verification link and a provider\'s proof end the MFA challenges opened before the claim, and take codes by e-mail off as codes by SMS', async (t) => {
      const { provider, env } = await googleTestProvider(t)
      const fixture = await buildServices(t, backend.url, env)
      const { services, repositories } = fixture
      for (const proof of ['verification link', 'provider'] as const) {
        const email = uniqueEmail('challenged')
        const context = contextFrom('203.0.113.13')
        const user = await services.accounts.register(context, { email, name: 'First Registrant', password: TEST_PASSWORD })
        await repositories.mfa.enable(user.id, 'sealed-secret', ['hash-1'], new Date().toISOString())
        await repositories.users.setMessageFactor(user.id, 'email', new Date().toISOString())
        const challenge = await services.signIn.withPassword(context, { email, password: TEST_PASSWORD })
        if (!challenge.mfa_required) throw new Error('expected a challenge')
        t.same(challenge.methods, ['totp', 'backup_code', 'email'], `${proof}: the registrant's challenge`)
        if (proof === 'verification link') {
          await services.emailVerification.verify(contextFrom('192.0.2.34'), await tokenSent(fixture, email, 'Verify'))
        } else {
          t.match(await providerSignIn(fixture, provider, { sub: `owner-${user.id}`, email, email_verified: true }, '198.51.100.31'), { userId: user.id, linked: true })
        }
        const { mfa_token: mfaToken } = challenge
        await t.rejects(services.signIn.sendChallengeCode(context, { mfa_token: mfaToken, method: 'email' }), Errors.INVALID_TOKEN, `${proof}: the challenge sends no code`)
        await t.rejects(services.signIn.answerChallenge(context, { mfa_token: mfaToken, code: '000000' }), Errors.INVALID_TOKEN, `${proof}: nor is answered`)
        t.match(await repositories.users.findPrincipal(user.id), { claimed: true, mfaEnabled: false, messageFactors: [] }, `${proof}: TOTP and codes by e-mail are off`)
        const entries = (await fixture.audited('account.claimed')).filter((row) => row.target_id === user.id)
        t.match(entries, [{ details: { authenticator_app: true, message_factors: ['email'] } }], `${proof}: audited`)
        await fixture.delivered()
        const notice = fixture.sent.find((mail) => mail.to === email && mail.subject === 'Your e-mail address was confirmed for your account')
        t.match(notice?.text, /the authenticator app \(TOTP\) and its backup codes, sign-in codes by e-mail/, `${proof}: the owner is told`)
      }
    })
  })

  t.test(`sensitive changes (${backend.name})`, async (t) => {
    t.test('an access token alone changes nothing of how the account signs in; the proofs it offers are listed', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture, [], { reauthenticated: false })
      const context = contextFrom('203.0.113.20', account)
      const refusal = await services.accounts.update(actingAs(account, context), account.id, { email: uniqueEmail('attacker') }).catch((error: unknown) => error)
      t.type(refusal, Errors.REAUTHENTICATION_REQUIRED)
      t.match(refusal, { statusCode: 403, details: [{ proof: 'password' }] })
      await t.rejects(services.accounts.update(actingAs(account, context), account.id, { phone: '+15555550102' }), Errors.REAUTHENTICATION_REQUIRED)
      await t.rejects(services.mfaSettings.enable(actingAs(account, context), { code: '000000' }), Errors.REAUTHENTICATION_REQUIRED)
      await t.rejects(services.mfaSettings.disableMessageFactor(actingAs(account, context), 'email', {}), Errors.REAUTHENTICATION_REQUIRED)
      await t.rejects(services.accounts.remove(actingAs(account, context), account.id, {}),
        Errors.REAUTHENTICATION_REQUIRED)
      await t.rejects(services.accounts.update(actingAs(account, context), account.id, { phone: '+15555550102', current_password: 'wrong-password' }), Errors.VALIDATION_FAILED)
      t.match(await services.accounts.update(actingAs(account, context), account.id, { phone: '+15555550102', current_password: TEST_PASSWORD }), { id: account.id }, 'the password beside the change is its proof')
      t.equal(await fixture.repositories.users.findPhone(account.id), '+15555550102')
    })

    t.test('a step-up is good 5 minutes for its session only', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, clock } = fixture
      const account = await owner(fixture, [], { reauthenticated: false })
      const context = contextFrom('192.0.2.40', account)
      const { expires_in: expiresIn } = await services.reauthentication.reauthenticate(actingAs(account, context), {
        password: TEST_PASSWORD
      })
      t.equal(expiresIn, 300)
      t.match(await fixture.audited('auth.reauthenticated'), [{ actor_id: account.id, details: { method: 'password' } }])
      await services.accounts.update(actingAs(account, context), account.id, { phone: '+15555550103' })
      const otherSession = await services.signIn.withPassword(contextFrom('192.0.2.41'), { email: account.email, password: TEST_PASSWORD })
      if (otherSession.mfa_required) throw new Error('no MFA expected')
      const other = callerOfPrincipal(await principalOf(fixture, account.id), otherSession.access_token)
      await t.rejects(services.accounts.update(contextFrom('192.0.2.41', other), account.id, { phone: '+15555550104' }), Errors.REAUTHENTICATION_REQUIRED, 'another session did not step up')
      clock.aheadMs = REAUTHENTICATION_TTL_MS + 1000
      await t.rejects(services.accounts.update(actingAs(account, context), account.id, { phone: '+15555550105' }), Errors.REAUTHENTICATION_REQUIRED, 'the step-up is over')
    })

    t.test('an account with a second factor proves a factor: its password alone is refused, a code is taken', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const context = contextFrom('192.0.2.42', account)
      const { secret } = await services.mfaSettings.setup(actingAs(account))
      const [backupCode = ''] = await services.mfaSettings.enable(actingAs(account, context), { code: totp(secret) })
      const signedIn = await services.signIn.withPassword(context, { email: account.email, password: TEST_PASSWORD })
      if (!signedIn.mfa_required) throw new Error('expected a challenge')
      const pair = await services.signIn.answerChallenge(context, { mfa_token: signedIn.mfa_token, code: backupCode })
      const caller = callerOfPrincipal(await principalOf(fixture, account.id), pair.access_token)
      t.same(caller.amr, ['pwd', 'otp', 'mfa'], 'the token says how the sign-in was proved')
      const refusal = await services.reauthentication.reauthenticate(contextFrom('192.0.2.42', caller), { password: TEST_PASSWORD }).catch((error: unknown) => error)
      t.match(refusal, { code: 'REAUTHENTICATION_REQUIRED', details: [{ proof: 'totp' }, { proof: 'backup_code' }] })
      await t.rejects(services.accounts.update(contextFrom('192.0.2.42', caller), account.id, { phone: '+15555550106', current_password: TEST_PASSWORD }), Errors.REAUTHENTICATION_REQUIRED)
      await t.rejects(services.accounts.update(contextFrom('192.0.2.42', caller), account.id, { phone: '+15555550106', mfa_code: '000000' }), Errors.INVALID_MFA_CODE)
      t.ok(await services.accounts.update(contextFrom('192.0.2.42', caller), account.id, { phone: '+15555550106', mfa_code: generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 }) }), 'a code of the next step: the enabling one is spent')
    })

    t.test('an account whose only second factor is a passkey proves a factor: its password is refused with the passkey offered, an assertion is taken', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, audit } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      const creation = await services.passkeys.registrationOptions(actingAs(account))
      await services.passkeys.register(contextFrom('192.0.2.46', account), { response: authenticator.register(creation) })
      const principal = await principalOf(fixture, account.id)
      t.match(principal, { hasPasskey: true, mfaEnabled: false, messageFactors: [] }, 'a passkey and no other factor')
      const pair = await services.sessions.start(principal, undefined, ['pwd'], audit.recorded(contextFrom('192.0.2.46'), []))
      const session = contextFrom('192.0.2.46', callerOfPrincipal(principal, pair.access_token))

      const refusal = await services.reauthentication.reauthenticate(session, { password: TEST_PASSWORD })
        .catch((error: unknown) => error)
      t.type(refusal, Errors.REAUTHENTICATION_REQUIRED, 'a password step-up is refused')
      t.same((refusal as { details: Array<{ proof: string }> }).details.map((offer) => offer.proof), ['passkey'], 'the passkey is offered, the password not')
      await t.rejects(services.accounts.update(session, account.id, { phone: '+15555550107', current_password: TEST_PASSWORD }), Errors.REAUTHENTICATION_REQUIRED, 'the password beside a change')
      await t.rejects(services.accounts.update(session, account.id, { password: 'a-new-password-2', current_password: TEST_PASSWORD }), Errors.REAUTHENTICATION_REQUIRED, 'a new password needs the factor too')

      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
      const assertion = { challenge_id: challengeId, response: authenticator.assert(options) }
      const stepUp = await services.reauthentication.reauthenticate(session, { passkey: assertion })
      t.equal(stepUp.expires_in, 300, 'the assertion is the proof')
      t.match(await fixture.audited('auth.reauthenticated'), [{ actor_id: account.id, details: { method: 'passkey' } }])
      t.match(await services.accounts.update(session, account.id, { phone: '+15555550107' }), { id: account.id }, 'then a sensitive change')
      t.match(await services.accounts.update(session, account.id, { password: 'a-new-password-2', current_password: TEST_PASSWORD }), { id: account.id }, 'and a new password')
    })

    t.test('a role that must enrol makes its first enrolment with a sign-in of the last 10 minutes, not later', async (t) => {
      const fixture = await buildServices(t, backend.url, { MFA_REQUIRED_ROLES: 'admin' })
      const { services, clock } = fixture
      const admin = await owner(fixture, ['admin'], { reauthenticated: false })
      const context = contextFrom('192.0.2.43', admin)
      const { secret } = await services.mfaSettings.setup(actingAs(admin))
      t.ok(await services.mfaSettings.enable(actingAs(admin, context), { code: totp(secret) }), 'the sign-in is the proof')
      const late = await owner(fixture, ['admin'], { reauthenticated: false })
      const { secret: lateSecret } = await services.mfaSettings.setup(actingAs(late))
      clock.aheadMs = 10 * MINUTE + 1000
      await t.rejects(services.mfaSettings.enable(contextFrom('192.0.2.44', late), { code: totp(lateSecret) }), Errors.REAUTHENTICATION_REQUIRED)
      const plain = await owner(fixture, [], { reauthenticated: false })
      clock.aheadMs = 0
      const { secret: plainSecret } = await services.mfaSettings.setup(actingAs(plain))
      await t.rejects(services.mfaSettings.enable(contextFrom('192.0.2.45', plain), { code: totp(plainSecret) }), Errors.REAUTHENTICATION_REQUIRED, 'an account free to go without MFA proves itself as for any change')
    })
  })
}
