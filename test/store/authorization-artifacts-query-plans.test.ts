import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The authorization server's storage (src/store/authorization-artifacts.ts) finds its rows
 * through an index on both databases: by model and id, a device's user code, a session's uid,
 * a grant's codes and tokens, an account's consents and everything else it holds, the expired;
 * and the service's session a session there is bound to, by that session's uid.
 */

const { checkPlans } = planChecker(['authorization_artifacts', 'sessions'])

const ACCOUNTS = 1000
const at = (second: number) => new Date(Date.UTC(2030, 0, 1) + second * 1000).toISOString()
const account = (index: number) => `account-${index}`

/** Per account: a session, a consent, an access and a refresh token of that consent, a device code; some expired. */
async function seed ({ db, dialect }: Database) {
  const rows = Array.from({ length: ACCOUNTS }, (_, index) => {
    const base = { account_id: account(index), client_id: `client-${index % 10}`, user_code: null, uid: null, grant_id: null }
    const expires = at(index % 50 === 0 ? -10 : 3600)
    return [
      { ...base, model: 'Session', id: `session-${index}`, uid: `uid-${index}`, expires_at: expires },
      { ...base, model: 'Grant', id: `grant-${index}`, expires_at: at(86400) },
      { ...base, model: 'AccessToken', id: `access-${index}`, grant_id: `grant-${index}`, expires_at: expires },
      { ...base, model: 'RefreshToken', id: `refresh-${index}`, grant_id: `grant-${index}`, expires_at: expires },
      { ...base, model: 'DeviceCode', id: `device-${index}`, user_code: `CODE${index}`, expires_at: expires }
    ].map((row) => ({ ...row, payload: JSON.stringify({ accountId: row.account_id, iat: 0 }) }))
  }).flat()
  await insertChunked(db, 'authorization_artifacts', rows)
  await insertChunked(db, 'users', Array.from({ length: ACCOUNTS }, (_, index) => ({
    id: account(index), email: `${account(index)}@example.com`, name: 'User', email_verified: 1, created_at: at(0), updated_at: at(0)
  })))
  // Per account: three sessions, one of them bound to its session at the authorization server.
  await insertChunked(db, 'sessions', Array.from({ length: ACCOUNTS * 3 }, (_, index) => ({
    id: `service-session-${index}`,
    user_id: account(index % ACCOUNTS),
    device: '{}',
    created_at: at(0),
    last_used_at: at(0),
    authorization_session_uid: index < ACCOUNTS ? `uid-${index}` : null
  })))
  if (dialect === 'postgres') {
    await sql`analyze authorization_artifacts`.execute(db)
    await sql`analyze sessions`.execute(db)
  }
}

for (const backend of backends()) {
  t.test(`authorization server storage query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const artifacts = recorded.repositories.authorizationArtifacts
    await seed(database)
    const now = at(0)

    t.test('one artifact by model and id, by user code, by uid', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.type(await artifacts.find('AccessToken', 'access-7', now), 'string')
      }, /authorization_artifacts_pkey|sqlite_autoindex_authorization_artifacts_1/)
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.type(await artifacts.findByUserCode('DeviceCode', 'CODE7', now), 'string')
      }, /authorization_artifacts_model_user_code/)
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.type(await artifacts.findByUid('Session', 'uid-7', now), 'string')
        t.equal(await artifacts.findByUid('Session', 'uid-50', now), undefined, 'an expired one is never read')
      }, /authorization_artifacts_model_uid/)
    })

    t.test('a grant\'s codes and tokens, an account\'s consents', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        await artifacts.revokeByGrantId('grant-8')
      }, /authorization_artifacts_grant_id/)
      t.equal(await artifacts.find('AccessToken', 'access-8', now), undefined)
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.same((await artifacts.grantsOf(account(9), now)).map((grant) => grant.id), ['grant-9'])
      }, /authorization_artifacts_account_id/)
    })

    t.test('ending an account\'s sessions removes everything of it, and only of it', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        await artifacts.endAccount(account(11))
      }, /authorization_artifacts_account_id/)
      const left = await database.db.selectFrom('authorization_artifacts').select('id').where('account_id', '=', account(11)).execute()
      t.same(left, [])
      t.type(await artifacts.find('Grant', 'grant-12', now), 'string', 'another account\'s consent is kept')
    })

    t.test('a consent\'s organization, by the grant\'s key', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.equal(await artifacts.chooseOrganization(account(13), 'grant-13', 'organization-1'), true)
        t.equal(await artifacts.chooseOrganization(account(14), 'grant-13', 'organization-1'), false, 'another account\'s consent')
        t.equal(await artifacts.organizationOfGrant(account(13), 'grant-13'), 'organization-1')
      }, /authorization_artifacts_pkey|sqlite_autoindex_authorization_artifacts_1|authorization_artifacts_account_id/)
    })

    t.test('the service\'s session a session at the authorization server is bound to, by its uid', async (t) => {
      const sessions = recorded.repositories.sessions
      const cutoffs = { idleBefore: at(-60), createdBefore: at(-60) }
      await checkPlans(t, database, recorded, 'sessions', async () => {
        t.equal(await sessions.useAuthorizationSession(account(15), 'uid-15', cutoffs, at(1)), true)
        t.equal(await sessions.useAuthorizationSession(account(16), 'uid-15', cutoffs, at(1)), false, 'another account\'s')
        t.same(await sessions.ofAuthorizationSession('uid-15'), ['service-session-15'])
        const opened = await sessions.open({
          userId: account(15),
          device: {},
          firstPair: null,
          authorizationSessionUid: 'uid-15',
          now: at(2),
          authentication: { authTime: at(2), amr: ['pwd'] },
          cutoffs,
          maxConcurrent: 10,
          accessIssuedAfter: at(0)
        })
        t.same(await sessions.ofAuthorizationSession('uid-15'), [opened?.id], 'a new sign-in in that browser ends the session before')
      }, /sessions_authorization_session_uid|sessions_user_id_live|sessions_pkey|sqlite_autoindex_sessions_1/)
      const late = { idleBefore: at(2), createdBefore: at(-60) }
      t.equal(await sessions.useAuthorizationSession(account(17), 'uid-17', late, at(3)), false, 'past the idle timeout')
    })

    t.test('the purge deletes the expired in batches through the expiry index', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.equal(await artifacts.purgeExpired(now, 30), 30)
      }, /authorization_artifacts_expires_at/)
      t.equal(await artifacts.purgeExpired(now, 1000), 4 * ACCOUNTS / 50 - 30, 'the rest of the expired')
      t.equal(await artifacts.purgeExpired(now, 1000), 0)
    })
  })
}
