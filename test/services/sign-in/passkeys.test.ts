import t from 'tap'
import { Errors } from '../../../src/errors.js'
import type { Caller } from '../../../src/services/context.js'
import { StoreConflict } from '../../../src/store/errors.js'
import { singleUseStores } from '../../../src/store/single-use.js'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'
import { actingAs, buildServices, contextFrom, owner, steppedUpWithoutPassword, type ServiceFixture, unverifyAddress } from '../../helpers/services.js'

const here = contextFrom('198.51.100.20')

/** Registers a passkey for `caller` on `authenticator` through the service. */
async function addPasskey (fixture: ServiceFixture, caller: Caller, authenticator: SoftwareAuthenticator, options: { attestation?: 'none' | 'packed', name?: string } = {}) {
  const creation = await fixture.services.passkeys.registrationOptions(actingAs(caller))
  const response = authenticator.register(creation, { attestation: options.attestation })
  return await fixture.services.passkeys.register(contextFrom('198.51.100.20', caller), { response, ...(options.name !== undefined && { name: options.name }) })
}

/** The reasons of the refused passkey sign-ins, sorted (entries of one millisecond have no order). */
async function refusals (fixture: ServiceFixture): Promise<string[]> {
  return (await fixture.audited('auth.login_failed')).filter((row) => row.details.method === 'passkey').map((row) => String(row.details.reason)).sort()
}

for (const backend of backends()) {
  t.test(`passkey service (${backend.name})`, async (t) => {
    t.test('registration (attestation none), then a sign-in with user verification: a session, audited, with a notice', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      const creation = await services.passkeys.registrationOptions(actingAs(account))
      t.match(creation, { rp: { id: 'localhost', name: 'Users API' }, user: { name: account.email, id: Buffer.from(account.id).toString('base64url') }, authenticatorSelection: { residentKey: 'required' } })
      const passkey = await services.passkeys.register(contextFrom('198.51.100.20', account), { response: authenticator.register(creation), name: 'Laptop' })
      t.match(passkey, { name: 'Laptop', last_used_at: null })
      t.match(await fixture.audited('passkey.added'), [{ target_id: account.id, details: { id: passkey.id, name: 'Laptop' } }])
      await fixture.delivered()
      t.match(fixture.sent.filter((message) => message.subject.includes('passkey')), [{ to: account.email, subject: 'A passkey was added to your account' }])

      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
      t.same(options.allowCredentials, [], 'no credential is listed: the passkey is discoverable')
      const result = await services.signIn.withPasskey(here, {
        challenge_id: challengeId,
        response: authenticator.assert(options)
      })
      t.ok('access_token' in result, 'a token pair, no second factor asked')
      t.match(await fixture.audited('auth.login'), [{ actor_id: account.id, details: { method: 'passkey' } }])
      const listed = await services.passkeys.list(actingAs(account), {})
      t.equal(listed.data.length, 1)
      t.type(listed.data[0]?.last_used_at, 'string', 'the sign-in is recorded on the passkey')
    })

    t.test('packed self attestation registers; a discoverable passkey signs in without an e-mail address', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator, { attestation: 'packed' })
      const { challenge_id: challengeId, options } = await fixture.services.passkeys.authenticationOptions(undefined)
      t.same(options.allowCredentials, [], 'any discoverable passkey may answer')
      const result = await fixture.services.signIn.withPasskey(here, {
        challenge_id: challengeId,
        response: authenticator.assert(options)
      })
      t.ok('access_token' in result)
    })

    t.test('a registration is refused for a replayed or foreign challenge, a wrong origin or RP ID, a broken attestation', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const other = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      const register = async (caller: Caller, response: ReturnType<SoftwareAuthenticator['register']>) =>
        await services.passkeys.register(contextFrom('198.51.100.20', caller), { response })

      const creation = await services.passkeys.registrationOptions(actingAs(account))
      const response = authenticator.register(creation)
      await register(account, response)
      await t.rejects(register(account, authenticator.register(creation)), Errors.VALIDATION_FAILED, 'a challenge is good once')
      await t.rejects(register(other, authenticator.register(await services.passkeys.registrationOptions(actingAs(account)))), Errors.VALIDATION_FAILED, 'another user\'s challenge')
      await t.rejects(register(account, authenticator.register(await services.passkeys.registrationOptions(actingAs(account)), { origin: 'https://evil.example' })), Errors.VALIDATION_FAILED, 'wrong origin')
      await t.rejects(register(account, authenticator.register(await services.passkeys.registrationOptions(actingAs(account)), { rpId: 'evil.example' })), Errors.VALIDATION_FAILED, 'wrong RP ID')
      const broken = authenticator.register(await services.passkeys.registrationOptions(actingAs(account)), { attestation: 'packed' })
      broken.response.attestationObject = broken.response.attestationObject.slice(0, -8)
      await t.rejects(register(account, broken), Errors.VALIDATION_FAILED, 'a truncated attestation')
      t.equal((await services.passkeys.list(actingAs(account), {})).data.length, 1, 'only the good registration stored a passkey')
    })

    t.test('an assertion is refused (401) for a replayed challenge, a wrong origin or RP ID, a tampered signature, an unknown passkey', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator)
      const signIn = async (response: (options: Awaited<ReturnType<typeof services.passkeys.authenticationOptions>>['options']) => ReturnType<SoftwareAuthenticator['assert']>) => {
        const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
        return await services.signIn.withPasskey(here, { challenge_id: challengeId, response: response(options) })
      }

      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
      const assertion = authenticator.assert(options)
      await services.signIn.withPasskey(here, { challenge_id: challengeId, response: assertion })
      await t.rejects(services.signIn.withPasskey(here, { challenge_id: challengeId, response: assertion }), Errors.INVALID_CREDENTIALS, 'replayed')
      await t.rejects(signIn((options) => authenticator.assert(options, { origin: 'http://localhost:4000' })), Errors.INVALID_CREDENTIALS, 'origin not allowed')
      await t.rejects(signIn((options) => authenticator.assert(options, { rpId: 'example.com' })), Errors.INVALID_CREDENTIALS, 'another RP ID')
      await t.rejects(signIn((options) => {
        const tampered = authenticator.assert(options)
        const signature = Buffer.from(tampered.response.signature, 'base64url')
        signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 0x01
        tampered.response.signature = signature.toString('base64url')
        return tampered
      }), Errors.INVALID_CREDENTIALS, 'tampered signature')
      const stranger = new SoftwareAuthenticator()
      stranger.register({ challenge: 'x', user: { id: 'eA' } })
      await t.rejects(signIn((options) => stranger.assert({ ...options, allowCredentials: [] })), Errors.INVALID_CREDENTIALS, 'a passkey never registered')
      await t.rejects(services.signIn.withPasskey(here, { challenge_id: 'no-such-challenge', response: assertion }), Errors.INVALID_CREDENTIALS, 'unknown challenge')
      t.same(await refusals(fixture), ['not_verified', 'not_verified', 'not_verified', 'unknown_challenge', 'unknown_challenge', 'unknown_passkey'])
      t.ok('access_token' in await signIn((options) => authenticator.assert(options)), 'the passkey still works')
    })

    t.test('a signature counter that goes backwards (or stays) refuses the sign-in', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator)
      const signIn = async (counter: number) => {
        const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
        return await services.signIn.withPasskey(here, {
          challenge_id: challengeId,
          response: authenticator.assert(options, { counter })
        })
      }
      t.ok('access_token' in await signIn(5))
      await t.rejects(signIn(3), Errors.INVALID_CREDENTIALS, 'backwards')
      await t.rejects(signIn(5), Errors.INVALID_CREDENTIALS, 'the same value again')
      t.ok('access_token' in await signIn(6))
      t.same(await refusals(fixture), ['counter_went_backwards', 'counter_went_backwards'])
    })

    t.test('options for one account accept none of another account\'s passkeys', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const alice = await owner(fixture)
      const bob = await owner(fixture)
      const bobsAuthenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, bob, bobsAuthenticator)
      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(alice.email)
      const response = bobsAuthenticator.assert({ ...options, allowCredentials: [] })
      await t.rejects(
        services.signIn.withPasskey(here, { challenge_id: challengeId, response }),
        Errors.INVALID_CREDENTIALS
      )
      t.same(await refusals(fixture), ['passkey_of_another_account'])
      t.same(await fixture.audited('auth.login'), [], 'nobody signed in')
    })

    t.test('an address without an account gets options like any other, and a challenge no passkey answers', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator)
      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(uniqueEmail('nobody'))
      t.same(options.allowCredentials, [])
      await t.rejects(
        services.signIn.withPasskey(here, { challenge_id: challengeId, response: authenticator.assert(options) }),
        Errors.INVALID_CREDENTIALS
      )
      t.same(await refusals(fixture), ['passkey_of_another_account'])
      t.same(await fixture.audited('auth.login'), [], 'nobody signed in')
    })

    t.test('without user verification a passkey is the password step: with TOTP on, the MFA challenge follows', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator)
      const signIn = async () => {
        const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
        return await services.signIn.withPasskey(here, {
          challenge_id: challengeId,
          response: authenticator.assert(options, { userVerified: false })
        })
      }
      t.ok('access_token' in await signIn(), 'no MFA on: the passkey alone signs in')
      await repositories.mfa.enable(account.id, 'sealed-secret', ['backup-code-hash'], new Date().toISOString())
      t.match(await signIn(), { mfa_required: true, methods: ['totp', 'backup_code'] })
    })

    t.test('an account of a role that must use MFA, whose only second factor is a passkey, is told to sign in with it', async (t) => {
      const fixture = await buildServices(t, backend.url, { MFA_REQUIRED_ROLES: 'admin' })
      const { services, repositories } = fixture
      const admin = await owner(fixture, ['admin'])
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, admin, authenticator)
      t.equal((await repositories.users.findPrincipal(admin.id))?.hasPasskey, true, 'the principal knows of the passkey')
      t.match(await services.signIn.withPassword(here, { email: admin.email, password: TEST_PASSWORD }), { mfa_required: true, methods: ['passkey'] })
      const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(admin.email)
      t.ok('access_token' in await services.signIn.withPasskey(here, { challenge_id: challengeId, response: authenticator.assert(options) }), 'the passkey with user verification signs in')
      const user = await owner(fixture)
      await addPasskey(fixture, user, new SoftwareAuthenticator())
      t.ok('access_token' in await services.signIn.withPassword(here, { email: user.email, password: TEST_PASSWORD }), 'other roles sign in with the password alone')
    })

    t.test('a locked account, or an unverified address under EMAIL_VERIFICATION=required, is refused as with a password', async (t) => {
      const fixture = await buildServices(t, backend.url, { EMAIL_VERIFICATION: 'required' })
      const { services, repositories } = fixture
      const account = await owner(fixture)
      const authenticator = new SoftwareAuthenticator()
      await addPasskey(fixture, account, authenticator)
      await unverifyAddress(fixture, account.id)
      const signIn = async (context = here) => {
        const { challenge_id: challengeId, options } = await services.passkeys.authenticationOptions(account.email)
        return await services.signIn.withPasskey(context, {
          challenge_id: challengeId,
          response: authenticator.assert(options)
        })
      }
      await t.rejects(signIn(), Errors.EMAIL_NOT_VERIFIED)
      await repositories.users.markEmailVerified(account.id, account.email)
      for (let n = 0; n < 5; n++) {
        await t.rejects(services.signIn.withPassword(here, { email: account.email, password: 'wrong-password' }), Errors.INVALID_CREDENTIALS)
      }
      await t.rejects(signIn(), Errors.ACCOUNT_LOCKED, 'locked from this address')
      t.ok('access_token' in await signIn(contextFrom('198.51.100.99')), 'another address signs in')
    })

    t.test('several passkeys per user: listed, renamed, removed; the last way to sign in stays', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, repositories } = fixture
      const created = await repositories.users.create({ email: uniqueEmail('passwordless'), name: 'No Password', passwordHash: null, roles: ['user'], emailVerified: true })
      const caller = await steppedUpWithoutPassword(fixture, created.id)
      const context = contextFrom('198.51.100.20', caller)
      const first = await addPasskey(fixture, caller, new SoftwareAuthenticator(), { name: 'Phone' })
      const second = await addPasskey(fixture, caller, new SoftwareAuthenticator())
      t.equal(second.name, 'Passkey', 'a default name')
      t.same((await services.passkeys.list(actingAs(caller), {})).data.map((passkey) => passkey.name), ['Phone', 'Passkey'])
      t.match(await services.passkeys.rename(actingAs(caller, context), second.id, { name: 'Security key' }), { id: second.id, name: 'Security key' })
      const stranger = await owner(fixture)
      await t.rejects(services.passkeys.rename(contextFrom('198.51.100.20', stranger), second.id, { name: 'Mine' }), Errors.NOT_FOUND, 'another user\'s passkey is not found')
      await t.rejects(services.passkeys.remove(contextFrom('198.51.100.20', stranger), second.id, {}), Errors.NOT_FOUND)

      await services.passkeys.remove(actingAs(caller, context), first.id, {})
      await t.rejects(services.passkeys.remove(actingAs(caller, context), second.id, {}), Errors.CONFLICT, 'no password, no provider: the last passkey stays')
      await repositories.identities.link('github', 'subject-1', caller.id, null)
      await services.passkeys.remove(actingAs(caller, context), second.id, {})
      t.same((await services.passkeys.list(actingAs(caller), {})).data, [], 'with a linked provider it may go')
      const removals = await fixture.audited('passkey.removed')
      t.same(removals.map((row) => row.details.id).sort(), [first.id, second.id].sort())
      t.ok(removals.every((row) => row.target_id === caller.id))
      t.equal((await repositories.users.findPrincipal(caller.id))?.hasPasskey, false)

      const withPassword = await owner(fixture)
      const only = await addPasskey(fixture, withPassword, new SoftwareAuthenticator())
      await services.passkeys.remove(contextFrom('198.51.100.20', withPassword), only.id, {})
      t.same((await services.passkeys.list(actingAs(withPassword), {})).data, [], 'an account with a password may remove its only passkey')
    })

    t.test('the same credential cannot be registered twice', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await owner(fixture)
      await fixture.repositories.passkeys.add(account.id, { credentialId: 'AAAA', publicKey: 'AAAA', counter: 0, transports: [], name: 'x' })
      await t.rejects(fixture.repositories.passkeys.add(account.id, { credentialId: 'AAAA', publicKey: 'AAAA', counter: 0, transports: [], name: 'y' }),
        new StoreConflict('passkey_registered'), 'the store says why; the service answers CONFLICT')
    })

    t.test('a challenge in the database is single use and expires', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const store = singleUseStores(fixture.database.db, null).passkeyChallenges
      await store.put('k', { challenge: 'c', userId: null }, 60_000)
      t.same(await store.take('k'), { challenge: 'c', userId: null })
      t.equal(await store.take('k'), null, 'taken once')
      await store.put('expired', { challenge: 'c', userId: null }, -1)
      t.equal(await store.take('expired'), null, 'past its time')
    })
  })
}
