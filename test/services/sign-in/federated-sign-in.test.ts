import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import type { TestContext } from '../../helpers/context.js'
import { backends } from '../../helpers/database.js'
import {
  actingAs, buildServices, contextFrom, googleTestProvider, providerSignIn, registered, steppedUpWithoutPassword
} from '../../helpers/services.js'

/** Google on fixed endpoints, served by a test provider, and the services configured for it. */
async function withProvider (t: TestContext, postgresUrl: string | null) {
  const { provider, env } = await googleTestProvider(t)
  return { fixture: await buildServices(t, postgresUrl, env), provider }
}

for (const backend of backends()) {
  t.test(`OAuth sign-in service (${backend.name})`, async (t) => {
    t.test('an unknown subject and e-mail make a new account with role user, no password, linked; the subject then signs in to it', async (t) => {
      const { fixture, provider } = await withProvider(t, backend.url)
      const email = uniqueEmail('oauth')
      const first = await providerSignIn(fixture, provider, { sub: 'new-1', email, email_verified: true, name: 'Ada Provider' })
      t.match(first, { provider: 'google', created: true, linked: true })
      const user = await fixture.repositories.users.findByEmail(email)
      t.match(user, { id: first.userId, name: 'Ada Provider', email_verified: true, password_hash: null })
      t.same((await fixture.repositories.users.findPrincipal(first.userId))?.roles, ['user'])
      t.same((await fixture.audited('user.created')).map((row) => [row.target_id, row.details]), [[first.userId, { provider: 'google' }]])
      t.same((await fixture.audited('identity.linked')).map((row) => row.target_id), [first.userId])

      const again = await providerSignIn(fixture, provider, { sub: 'new-1', email: uniqueEmail('changed'), email_verified: true })
      t.same(again, { userId: first.userId, provider: 'google', created: false, linked: false }, 'the linked subject wins over a changed e-mail')
    })

    t.test('a claimed account is linked by e-mail only when the provider and the service have both verified it; otherwise 409 and nothing linked', async (t) => {
      const { fixture, provider } = await withProvider(t, backend.url)
      const account = await registered(fixture)
      await fixture.repositories.users.markEmailVerified(account.id, account.email)
      await t.rejects(providerSignIn(fixture, provider, { sub: 'link-1', email: account.email, email_verified: false }), Errors.EMAIL_ALREADY_REGISTERED, 'not verified at the provider')
      t.equal(await fixture.repositories.identities.userOf('google', 'link-1'), undefined, 'nothing linked')
      t.same(await fixture.audited('identity.linked'), [])

      const linked = await providerSignIn(fixture, provider, { sub: 'link-1', email: account.email.toUpperCase(), email_verified: true })
      t.same(linked, { userId: account.id, provider: 'google', created: false, linked: true })
      t.match(await fixture.audited('identity.linked'), [{ actor_id: account.id, target_id: account.id, details: { provider: 'google' } }])
      t.same((await fixture.audited('user.created')).length, 1, 'only the registration created a user')
    })

    t.test('a provider that verified the address claims an unclaimed account: its identity is linked, everything else goes, the first registrant\'s password too', async (t) => {
      const { fixture, provider } = await withProvider(t, backend.url)
      const { services, repositories } = fixture
      const account = await registered(fixture)
      await repositories.identities.link('github', 'attacker-1', account.id, account.email)
      const stolen = await services.signIn.withPassword(contextFrom('203.0.113.50'), { email: account.email, password: TEST_PASSWORD })
      const claimed = await providerSignIn(fixture, provider, { sub: 'owner-1', email: account.email, email_verified: true })
      t.same(claimed, { userId: account.id, provider: 'google', created: false, linked: true })
      t.same((await services.federation.identities(actingAs(account))).map((identity) => identity.provider), ['google'], 'only the proving identity is left')
      t.equal(await repositories.users.findPasswordHash(account.id), null, 'the registrant\'s password is gone')
      t.equal((await repositories.users.findPrincipal(account.id))?.claimed, true)
      if (!stolen.mfa_required) await t.rejects(services.signIn.refresh(contextFrom('203.0.113.50'), stolen.refresh_token), Errors.INVALID_TOKEN, 'the registrant\'s session ended')
      t.match(await fixture.audited('account.claimed'), [{ target_id: account.id, details: { identities: 1, credential_removed: true } }])
    })

    t.test('a provider that did not verify the address never links to an account, and an account it creates is unclaimed', async (t) => {
      const { fixture, provider } = await withProvider(t, backend.url)
      const { repositories } = fixture
      const account = await registered(fixture)
      await t.rejects(providerSignIn(fixture, provider, { sub: 'unverified-1', email: account.email, email_verified: false }), Errors.EMAIL_ALREADY_REGISTERED, 'an unclaimed account is not taken')
      t.equal(await repositories.identities.userOf('google', 'unverified-1'), undefined)
      const created = await providerSignIn(fixture, provider, { sub: 'unverified-2', email: uniqueEmail('unverified'), email_verified: false })
      t.equal(created.created, true)
      t.match(await repositories.users.findPrincipal(created.userId), { claimed: false, emailVerified: false })
    })

    t.test('a state is good once, for the browser that holds it and the provider it was issued for', async (t) => {
      const { fixture } = await withProvider(t, backend.url)
      const { federation } = fixture.services
      const { state } = await federation.authorize('google', {})
      await t.rejects(federation.takeState('google', { state }, undefined), Errors.INVALID_OAUTH_STATE, 'no cookie')
      await t.rejects(federation.takeState('google', { state }, 'another-browser'), Errors.INVALID_OAUTH_STATE, 'another browser\'s cookie')
      await federation.takeState('GOOGLE', { state }, state)
      await t.rejects(federation.takeState('google', { state }, state), Errors.INVALID_OAUTH_STATE, 'spent')
      await t.rejects(federation.takeState('github', { state }, state), Errors.UNSUPPORTED_PROVIDER, 'a provider not configured')
    })

    t.test('the only identity of an account without a password or passkey is not unlinked', async (t) => {
      const { fixture, provider } = await withProvider(t, backend.url)
      const { userId } = await providerSignIn(fixture, provider, { sub: 'only-1', email: uniqueEmail('only'), email_verified: true })
      const caller = await steppedUpWithoutPassword(fixture, userId)
      const [identity] = await fixture.services.federation.identities(actingAs(caller))
      if (identity === undefined) throw new Error('expected an identity')
      await t.rejects(fixture.services.federation.unlink(contextFrom('198.51.100.31', caller), identity.id, {}), Errors.CONFLICT)
      await t.rejects(fixture.services.federation.unlink(contextFrom('198.51.100.31', caller), '00000000-0000-7000-8000-000000000000', {}), Errors.NOT_FOUND)
      t.equal((await fixture.services.federation.identities(actingAs(caller))).length, 1)
      t.same(await fixture.audited('identity.unlinked'), [])
    })
  })
}
