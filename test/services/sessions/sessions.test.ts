import t from 'tap'
import { Errors } from '../../../src/errors.js'
import { CursorCodec } from '../../../src/collection/cursor.js'
import { loadConfig } from '../../../src/config/index.js'
import { SecretBox } from '../../../src/security/secret-box.js'
import { TokenService } from '../../../src/security/tokens.js'
import { SessionService } from '../../../src/services/sessions/sessions.js'
import { TEST_SECRET } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { buildServices, contextFrom, type ServiceFixture, registered } from '../../helpers/services.js'

/** A session service over the fixture's store whose clock the test sets. */
function withClock (fixture: ServiceFixture, secret = TEST_SECRET) {
  const clock = { now: Date.now() }
  const sessions = new SessionService({
    tokens: new TokenService({ secret: TEST_SECRET }),
    sessions: fixture.repositories.sessions,
    impersonations: fixture.repositories.impersonations,
    authorizationArtifacts: fixture.repositories.authorizationArtifacts,
    apiKeys: fixture.repositories.apiKeys,
    revokeAccessToken: async () => {},
    organizationRoleFor: async (organizationId, userId, trx) =>
      await fixture.repositories.organizations.roleForRotation(organizationId, userId, trx),
    policy: loadConfig({}).session,
    cursors: new CursorCodec(TEST_SECRET),
    retryBox: new SecretBox(secret, 'refresh-retry'),
    now: () => clock.now
  })
  return { sessions, clock }
}

/** What the sign-in service stores a session's opening or rotation with: its audit entry. */
function recordedFor (fixture: ServiceFixture, event: 'auth.login' | 'auth.refresh') {
  return (userId: string) => fixture.audit.recorded(contextFrom('192.0.2.1'), [{ event, outcome: 'success', actorId: userId, targetId: userId }])
}

for (const backend of backends()) {
  t.test(`session service (${backend.name})`, async (t) => {
    t.test('a spent token gets the same pair for REFRESH_RETRY_WINDOW_S (10 s) after its rotation, then it is reuse', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const { sessions, clock } = withClock(fixture)
      const first = await sessions.start(account, undefined, ['pwd'], recordedFor(fixture, 'auth.login')(account.id))
      const rotated = await sessions.refresh(first.refresh_token, recordedFor(fixture, 'auth.refresh'))
      t.equal(rotated.retry, false)
      clock.now += 9999
      t.same(await sessions.refresh(first.refresh_token, recordedFor(fixture, 'auth.refresh')), { ...rotated, retry: true }, 'within the window: the same pair')
      clock.now += 1
      await t.rejects(sessions.refresh(first.refresh_token, recordedFor(fixture, 'auth.refresh')), Errors.TOKEN_REUSED, 'at its end: reuse')
      await t.rejects(sessions.refresh(rotated.pair.refresh_token, recordedFor(fixture, 'auth.refresh')), Errors.TOKEN_REUSED, 'which ended the session')
      t.equal((await fixture.audited('auth.refresh')).length, 1, 'the rotation was stored with its entry; nothing else was')
    })

    t.test('the kept pair is sealed, answered only under the same secret, and erased after the window', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const account = await registered(fixture)
      const { sessions, clock } = withClock(fixture)
      const first = await sessions.start(account, undefined, ['pwd'], recordedFor(fixture, 'auth.login')(account.id))
      const { pair } = await sessions.refresh(first.refresh_token, recordedFor(fixture, 'auth.refresh'))
      const stored = await fixture.database.db.selectFrom('sessions').select('retry_pair').where('user_id', '=', account.id).executeTakeFirstOrThrow()
      t.ok(stored.retry_pair !== null && !stored.retry_pair.includes(pair.refresh_token) && !stored.retry_pair.includes(pair.access_token.split('.')[1] ?? ''), 'no token in the clear')

      const other = withClock(fixture, 'another-secret-of-at-least-32-characters')
      other.clock.now = clock.now
      await t.rejects(other.sessions.refresh(first.refresh_token, recordedFor(fixture, 'auth.refresh')), Errors.TOKEN_REUSED, 'another secret opens nothing: reuse')
      await t.rejects(sessions.refresh(pair.refresh_token, recordedFor(fixture, 'auth.refresh')), Errors.TOKEN_REUSED, 'which ended the session')

      const second = await sessions.start(account, undefined, ['pwd'], recordedFor(fixture, 'auth.login')(account.id))
      await sessions.refresh(second.refresh_token, recordedFor(fixture, 'auth.refresh'))
      clock.now += 9999
      await sessions.eraseLapsedRetries()
      t.equal((await fixture.database.db.selectFrom('sessions').select('id').where('retry_pair', 'is not', null).execute()).length, 1, 'kept within the window')
      clock.now += 1
      await sessions.eraseLapsedRetries()
      t.same(await fixture.database.db.selectFrom('sessions').select('id').where('retry_pair', 'is not', null).execute(), [], 'erased after it')
    })
  })
}
