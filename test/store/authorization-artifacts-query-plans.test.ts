import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * The authorization server's storage (src/store/authorization-artifacts.ts) finds its rows
 * through an index on both databases: by model and id, a device's user code, a session's uid,
 * a grant's codes and tokens, an account's consents and everything else it holds, the expired.
 */

const { checkPlans } = planChecker(['authorization_artifacts'])

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
  if (dialect === 'postgres') await sql`analyze authorization_artifacts`.execute(db)
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

    t.test('the purge deletes the expired in batches through the expiry index', async (t) => {
      await checkPlans(t, database, recorded, 'authorization_artifacts', async () => {
        t.equal(await artifacts.purgeExpired(now, 30), 30)
      }, /authorization_artifacts_expires_at/)
      t.equal(await artifacts.purgeExpired(now, 1000), 4 * ACCOUNTS / 50 - 30, 'the rest of the expired')
      t.equal(await artifacts.purgeExpired(now, 1000), 0)
    })
  })
}
