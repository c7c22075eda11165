import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { VERIFICATION_TTL_MS } from '../../../src/services/accounts/email-verification.js'
import { RESET_TTL_MS } from '../../../src/services/accounts/password-reset.js'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { buildServices, contextFrom, registered, tokenSent } from '../../helpers/services.js'

const SECOND = 1000

for (const backend of backends()) {
  t.test(`one-time tokens expire (${backend.name})`, async (t) => {
    t.test('a verification token is refused once its 24 hours are over, and good until then', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, clock } = fixture
      const account = await registered(fixture)
      const token = await tokenSent(fixture, account.email, 'Verify')
      clock.aheadMs = VERIFICATION_TTL_MS + SECOND
      await t.rejects(services.emailVerification.verify(contextFrom('192.0.2.20'), token), Errors.INVALID_ONE_TIME_TOKEN)
      clock.aheadMs = VERIFICATION_TTL_MS - SECOND
      t.match(await services.emailVerification.verify(contextFrom('192.0.2.20'), token), { id: account.id, email_verified: true }, 'the expired attempt spent nothing')
    })

    t.test('a reset token is refused once its 30 minutes are over, and good until then', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, clock } = fixture
      const account = await registered(fixture)
      const context = contextFrom('192.0.2.21')
      await services.passwordReset.requestReset(context, { email: account.email })
      const token = await tokenSent(fixture, account.email, 'Reset')
      clock.aheadMs = RESET_TTL_MS + SECOND
      await t.rejects(services.passwordReset.reset(context, { token, password: 'a-brand-new-passphrase' }), Errors.INVALID_ONE_TIME_TOKEN)
      await t.resolves(services.signIn.withPassword(context, { email: account.email, password: TEST_PASSWORD }), 'the password is unchanged')
      clock.aheadMs = RESET_TTL_MS - SECOND
      await services.passwordReset.reset(context, { token, password: 'a-brand-new-passphrase' })
      await t.resolves(services.signIn.withPassword(context, { email: account.email, password: 'a-brand-new-passphrase' }), 'reset before it expired')
    })
  })
}
