import t from 'tap'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import { backends, refuseWrites } from '../../helpers/database.js'
import { actingAs, buildServices, contextFrom, owner, registered, type ServiceFixture } from '../../helpers/services.js'

/** Audit entries cannot be stored. */
const breakAuditWrites = async (fixture: ServiceFixture) => await refuseWrites(fixture, 'insert', 'audit_logs', 'audit storage refused')
/** Messages cannot be given to the outbox. */
const breakOutboxWrites = async (fixture: ServiceFixture) => await refuseWrites(fixture, 'insert', 'outbox', 'outbox storage refused')
/** No session can be ended. */
const breakSessionEnds = async (fixture: ServiceFixture) => await refuseWrites(fixture, 'update', 'sessions', 'session storage refused')

for (const backend of backends()) {
  t.test(`a change and its audit entry commit together (${backend.name})`, async (t) => {
    t.test('when the entry cannot be stored, the change is not kept either', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const admin = await registered(fixture, ['super_admin'])
      const user = await registered(fixture)
      await breakAuditWrites(fixture)
      const context = contextFrom('192.0.2.7', admin)

      await t.rejects(services.roles.assign(actingAs(admin, context), user.id, 'moderator'), /audit storage refused/)
      t.same((await repositories.users.findPrincipal(user.id))?.roles, ['user'], 'the role was not granted')

      const email = uniqueEmail('unrecorded')
      await t.rejects(services.accounts.register(context, { email, name: 'Unrecorded', password: TEST_PASSWORD }), /audit storage refused/)
      t.equal(await repositories.users.findByEmail(email), undefined, 'the account was not created')

      await t.rejects(services.signIn.withPassword(contextFrom('192.0.2.8'), { email: user.email, password: TEST_PASSWORD }), /audit storage refused/)
      t.same(await repositories.sessions.unrevokedIds(user.id), [], 'no session was opened')

      await t.rejects(services.accounts.remove(actingAs(admin, context), user.id, {}), /audit storage refused/)
      t.not(await repositories.users.findById(user.id), undefined, 'the account was not deleted')
    })

    t.test('a refresh whose entry cannot be stored keeps no rotation: its token stays unspent, no successor', async (t) => {
      // On PostgreSQL the entry is stored by the rotation's own statement (Recorded.alone).
      const fixture = await buildServices(t, backend.url)
      const user = await registered(fixture)
      const context = contextFrom('192.0.2.14')
      const credentials = { email: user.email, password: TEST_PASSWORD }
      const signedIn = await fixture.services.signIn.withPassword(context, credentials)
      if (!('refresh_token' in signedIn)) throw new Error('expected a token pair')
      await breakAuditWrites(fixture)
      await t.rejects(fixture.services.signIn.refresh(context, signedIn.refresh_token), /audit storage refused/)
      const { db } = fixture.database
      const tokens = await db.selectFrom('refresh_tokens').select(['spent_at']).where('user_id', '=', user.id).execute()
      t.same(tokens, [{ spent_at: null }], 'the one token, unspent')
    })

    t.test('a change and the message it sends commit together: when the message cannot be stored, the change is not kept', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const user = await owner(fixture)
      await repositories.users.markEmailVerified(user.id, user.email)
      await breakOutboxWrites(fixture)
      const context = contextFrom('192.0.2.10', user)

      const email = uniqueEmail('unsent')
      await t.rejects(services.accounts.register(context, { email, name: 'Unsent', password: TEST_PASSWORD }), /outbox storage refused/)
      t.equal(await repositories.users.findByEmail(email), undefined, 'no account without its verification message')

      await t.rejects(services.accounts.update(actingAs(user, context), user.id, { password: 'a-brand-new-passphrase', current_password: TEST_PASSWORD }), /outbox storage refused/)
      await t.resolves(services.signIn.withPassword(contextFrom('192.0.2.11'), { email: user.email, password: TEST_PASSWORD }), 'no new password without its notice')

      await t.rejects(services.accounts.update(actingAs(user, context), user.id, { email: uniqueEmail('moved') }), /outbox storage refused/)
      t.match(await repositories.users.findById(user.id), { email: user.email, email_verified: true }, 'no new address without its notice and verification')

      await t.rejects(services.mfaSettings.enableMessageFactor(actingAs(user, context), 'email', {}), /outbox storage refused/)
      t.same((await repositories.users.findPrincipal(user.id))?.messageFactors, [], 'no second factor turned on without its notice')

      t.same((await fixture.audited('user.updated')).concat(await fixture.audited('mfa.enabled')), [], 'and nothing recorded')
      t.equal((await fixture.audited('user.created')).length, 1, 'only the first account\'s creation')
    })

    t.test('a new password and the end of every session commit together', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const user = await registered(fixture)
      await services.signIn.withPassword(contextFrom('192.0.2.12'), { email: user.email, password: TEST_PASSWORD })
      const sessions = await repositories.sessions.unrevokedIds(user.id)
      t.equal(sessions.length, 1)
      await breakSessionEnds(fixture)
      await t.rejects(services.accounts.update(contextFrom('192.0.2.12', user), user.id, { password: 'a-brand-new-passphrase', current_password: TEST_PASSWORD }), /session storage refused/)
      await t.resolves(services.signIn.withPassword(contextFrom('192.0.2.13'), { email: user.email, password: TEST_PASSWORD }), 'the old password still holds')
      t.same((await fixture.audited('user.updated')), [], 'and no change was recorded')
    })

    t.test('a refresh stores its rotation with one entry; a retry of it changes nothing and is recorded on its own', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const user = await registered(fixture)
      const context = contextFrom('192.0.2.9')
      const signedIn = await fixture.services.signIn.withPassword(context, {
        email: user.email,
        password: TEST_PASSWORD
      })
      if (!('refresh_token' in signedIn)) throw new Error('expected a token pair')
      const rotated = await fixture.services.signIn.refresh(context, signedIn.refresh_token)
      t.same(await fixture.services.signIn.refresh(context, signedIn.refresh_token), rotated, 'the retry gets the same pair')
      t.same((await fixture.audited('auth.refresh')).map((entry) => JSON.stringify(entry.details)).sort(), ['{"retry":true}', '{}'], 'one entry each')
      t.equal((await fixture.audited('auth.login')).length, 1)
    })
  })
}
