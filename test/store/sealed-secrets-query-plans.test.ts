import { sql } from 'kysely'
import t from 'tap'
import { SEALED_PURPOSES, SecretBox } from '../../src/security/secret-box.js'
import { resealAll } from '../../src/services/sealed-secrets.js'
import { SEALED_COLUMNS, type SealedTable } from '../../src/store/sealed-secrets.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * `npm run secrets:reseal` goes through every sealed value (docs/operations.md, "Sealed
 * secrets"): users is large, so it is read in ranges of its primary key, never whole, and a
 * value is replaced only while it is the box that was read.
 */
const { checkPlans } = planChecker(Object.keys(SEALED_COLUMNS))
const USERS = 3000
const [former, current] = ['f'.repeat(40), 'c'.repeat(40)]

for (const backend of backends()) {
  t.test(`the reseal reads the users by ranges of their key, and reseals each value once (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const sealed = new SecretBox(former, SEALED_PURPOSES.totpSecret)
    await insertChunked(database.db, 'users', Array.from({ length: USERS }, (_, index) => ({
      id: `0190${String(index).padStart(8, '0')}-0000-7000-8000-000000000000`,
      email: `user-${index}@example.com`,
      name: `User ${index}`,
      email_verified: 1,
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      // One in three has TOTP on, sealed under the former key.
      totp_secret: index % 3 === 0 ? sealed.seal(`SECRET${index}`) : null
    })))
    if (database.dialect === 'postgres') await sql`analyze users`.execute(database.db)
    const recorded = recordingRepositories(database)
    let report: Awaited<ReturnType<typeof resealAll>> | undefined
    await checkPlans(t, database, recorded, 'users', async () => {
      report = await resealAll(recorded.repositories.sealedSecrets, [current, former])
    }, database.dialect === 'sqlite' ? /SEARCH users USING (INDEX sqlite_autoindex_users_1|PRIMARY KEY) \(id>\?\)/ : /Index Cond: \(id > /)
    t.same(report?.users, { resealed: USERS / 3, unopenable: 0 })
    const again = await resealAll(recorded.repositories.sealedSecrets, [current, former])
    t.same(Object.values(again).map((counts) => counts.resealed), Object.keys(SEALED_COLUMNS).map(() => 0), 'nothing left the second time')
    const one = await database.db.selectFrom('users').select('totp_secret').where('email', '=', 'user-3@example.com').executeTakeFirstOrThrow()
    t.equal(new SecretBox(current, SEALED_PURPOSES.totpSecret).open(one.totp_secret ?? ''), 'SECRET3', 'under the new key')
    t.same(Object.keys(report ?? {}) as SealedTable[], ['users', 'webhook_endpoints', 'authorization_server_keys', 'sso_connections'])
  })
}
