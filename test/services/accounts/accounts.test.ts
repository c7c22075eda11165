import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { TEST_PASSWORD } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { actingAs, buildServices, contextFrom, owner } from '../../helpers/services.js'

const NEW_PASSWORD = 'another-long-passphrase'

for (const backend of backends()) {
  t.test(`account service (${backend.name})`, async (t) => {
    t.test('changing one\'s own password needs the current one; a wrong one counts as a failed sign-in', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const context = contextFrom('198.51.100.20', account)
      await t.rejects(services.accounts.update(actingAs(account, context), account.id, { password: NEW_PASSWORD }), { code: 'VALIDATION_FAILED', details: [{ path: '/current_password' }] })
      await t.rejects(services.accounts.update(actingAs(account, context), account.id, { password: NEW_PASSWORD, current_password: 'not-the-password' }), { code: 'VALIDATION_FAILED' })
      t.match(await fixture.audited('auth.login_failed'), [{ target_id: account.id, details: { reason: 'wrong_current_password' } }])
    })

    t.test('a new password ends every session of the account', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const pair = await services.signIn.withPassword(contextFrom('198.51.100.21'), { email: account.email, password: TEST_PASSWORD })
      if (!('refresh_token' in pair)) throw new Error('expected a pair')
      await services.accounts.update(contextFrom('198.51.100.21', account), account.id, { password: NEW_PASSWORD, current_password: TEST_PASSWORD })
      await t.rejects(services.signIn.refresh(contextFrom('198.51.100.21'), pair.refresh_token), Errors.INVALID_TOKEN, 'the old session is over')
      t.match(await fixture.audited('user.updated'), [{ actor_id: account.id, details: { changed: ['password'] } }])
      const again = await services.signIn.withPassword(contextFrom('198.51.100.21'), { email: account.email, password: NEW_PASSWORD })
      t.ok('access_token' in again, 'the new password signs in')
    })

    t.test('an admin may not change or delete a super_admin, nor anyone without manage_users', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const admin = await owner(fixture, ['admin'])
      const superAdmin = await owner(fixture, ['super_admin'])
      const plain = await owner(fixture)
      const other = await owner(fixture)
      await t.rejects(services.accounts.update(contextFrom('198.51.100.22', admin), superAdmin.id, { password: NEW_PASSWORD }), { code: 'FORBIDDEN', message: 'Permission denied. Requires: admin' })
      await t.rejects(services.accounts.remove(contextFrom('198.51.100.22', admin), superAdmin.id, {}), Errors.FORBIDDEN)
      await t.rejects(services.accounts.update(contextFrom('198.51.100.22', plain), other.id, { name: 'Renamed' }), { code: 'FORBIDDEN', message: 'Permission denied. Requires: manage_users' })
      const renamed = await services.accounts.update(contextFrom('198.51.100.22', admin), plain.id, { name: 'Renamed by admin' })
      t.equal(renamed.name, 'Renamed by admin', 'an admin manages a plain user')
    })

    t.test('deleting an account that does not exist succeeds and says so in the audit entry', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const admin = await owner(fixture, ['admin'])
      const missing = '0190a000-0000-7000-8000-000000000000'
      await fixture.services.accounts.remove(contextFrom('198.51.100.23', admin), missing, {})
      await t.rejects(fixture.services.accounts.update(contextFrom('198.51.100.23', admin), missing, { name: 'Nobody' }), Errors.NOT_FOUND)
      t.match(await fixture.audited('user.deleted'), [{ actor_id: admin.id, target_id: missing, details: { existed: false } }])
    })
  })
}
