import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { backends } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * Sign-ins by e-mail (docs/api.md, "Signing in by e-mail") are a row per message: issuing one
 * counts the address's messages of the hour and removes those long expired, a code is checked
 * against the address's live messages, and a link is found by its hash, each through an index,
 * on both databases.
 */

const { checkPlans } = planChecker(['email_sign_ins'])
const ROWS = 3000
const NOW = Date.UTC(2026, 0, 1, 12)
const at = (offsetMs: number) => new Date(NOW + offsetMs).toISOString()
const email = (index: number) => `person-${index % 1000}@example.com`

async function seed ({ db, dialect }: Database) {
  // Three messages to each of 1,000 addresses over the last two hours, a third of them expired long ago.
  await insertChunked(db, 'email_sign_ins', Array.from({ length: ROWS }, (_, index) => ({
    id: `0190${String(index).padStart(8, '0')}-0000-7000-8000-000000000000`,
    email: email(index),
    user_id: null,
    code_hash: `code-${index}`,
    link_hash: `link-${index}`,
    token_hash: null,
    confirmed_at: null,
    redirect_to: 'https://app.example.test/email-sign-in',
    attempts: 0,
    created_at: at(-(index % 3) * 50 * 60 * 1000),
    expires_at: at(-(index % 3) * 50 * 60 * 1000 + 10 * 60 * 1000),
    used_at: null
  })))
  if (dialect === 'postgres') await sql`analyze email_sign_ins`.execute(db)
}

for (const backend of backends()) {
  t.test(`e-mail sign-in query plans (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { emailSignIns } = recorded.repositories
    await seed(database)
    const linkIndex = database.dialect === 'sqlite' ? /sqlite_autoindex_email_sign_ins/ : /email_sign_ins_link_hash_key/
    const tokenIndex = database.dialect === 'sqlite' ? /sqlite_autoindex_email_sign_ins/ : /email_sign_ins_token_hash_key/

    t.test('issuing counts the address\'s messages of the hour, and removes those long expired, through their indexes', async (t) => {
      await checkPlans(t, database, recorded, 'email_sign_ins', async () => {
        t.ok(await emailSignIns.issue({
          id: '01900000-0000-7000-8000-00000000aaaa',
          email: email(7),
          user_id: null,
          code_hash: 'new-code',
          link_hash: 'new-link',
          redirect_to: null,
          created_at: at(0),
          expires_at: at(10 * 60 * 1000)
        }, null, [{ max: 5, since: at(-60 * 60 * 1000) }]))
      }, /email_sign_ins_email_created_at/)
      const plans = await checkPlans(t, database, recorded, 'email_sign_ins', async () => {
        await emailSignIns.issue({
          id: '01900000-0000-7000-8000-00000000aaab', email: email(8), user_id: null, code_hash: 'c', link_hash: 'l', redirect_to: null, created_at: at(0), expires_at: at(1)
        }, null, [{ max: 5, since: at(-60 * 60 * 1000) }])
      }, /email_sign_ins_expires_at/)
      t.ok(plans.length > 0)
    })

    t.test('a code is checked against the address\'s live messages; a wrong one counted on each by its key', async (t) => {
      await checkPlans(t, database, recorded, 'email_sign_ins', async () => {
        const live = await emailSignIns.live(email(5), at(0))
        t.equal(live.length, 1, 'the one message not yet expired')
        await emailSignIns.failedAttempt(live.map((request) => request.id), 5, at(0))
        t.notOk(await emailSignIns.spend('01900000-0000-7000-8000-00000000ffff', at(0)), 'no such message')
      }, /email_sign_ins_email_created_at/)
    })

    t.test('a link, and the token it hands over, are found by their hashes', async (t) => {
      await checkPlans(t, database, recorded, 'email_sign_ins', async () => {
        t.equal(await emailSignIns.linkFor('link-0', at(0)), email(0))
        t.same(await emailSignIns.confirmLink('link-0', 'exchange-0', at(0)), { redirectTo: 'https://app.example.test/email-sign-in' })
      }, linkIndex)
      await checkPlans(t, database, recorded, 'email_sign_ins', async () => {
        t.same(await emailSignIns.spendConfirmed('exchange-0', at(1000), at(-60_000)), { email: email(0), userId: null })
      }, tokenIndex)
    })
  })
}
