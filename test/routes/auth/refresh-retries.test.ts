import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { SEALED_PURPOSES, SecretBox } from '../../../src/security/secret-box.js'
import { generateKeyPair } from '../../../src/security/signing-keys.js'
import { createAccount, TEST_PASSWORD, withToken } from '../../helpers/accounts.js'
import { build, TEST_SECRET } from '../../helpers/app.js'
import { msUntil, within } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'

/*
 * Refresh retries (docs/api.md, "Sessions"): a spent refresh token presented again within
 * REFRESH_RETRY_WINDOW_S of its rotation, before its successor is spent, gets the same pair.
 * Concurrent refreshes and two instances: test/store/concurrency.test.ts. Every test runs on
 * each backend, without Redis and, when TEST_REDIS_URL is set, with it.
 */

const redisUrl = process.env.TEST_REDIS_URL
const setups: Array<{ name: string, env: Record<string, string> }> = [
  { name: '', env: {} },
  ...(redisUrl !== undefined && redisUrl !== '' ? [{ name: ' + redis', env: { REDIS_URL: redisUrl } }] : [])
]

async function login (app: FastifyInstance, account: { email: string }) {
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: TEST_PASSWORD } })
  if (response.statusCode !== 200) throw new Error(response.body)
  return response.json().data as { access_token: string, refresh_token: string }
}

function refresh (app: FastifyInstance, token: string) {
  return app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
}

/** The user's sessions and refresh tokens as stored. */
async function rows (app: FastifyInstance, userId: string) {
  const { db } = app.database
  return {
    sessions: await db.selectFrom('sessions').selectAll().where('user_id', '=', userId).orderBy('id').execute(),
    tokens: await db.selectFrom('refresh_tokens').selectAll().where('user_id', '=', userId).orderBy('jti').execute()
  }
}

/** The rotations kept for retries on the user's sessions. */
async function kept (app: FastifyInstance, userId: string) {
  return await app.database.db.selectFrom('sessions').select(['retry_jti', 'retry_until']).where('user_id', '=', userId).where('retry_pair', 'is not', null).execute()
}

for (const backend of backends()) {
  for (const setup of setups) {
    t.test(`${backend.name}${setup.name}`, async (t) => {
      t.test('a spent token presented again within the retry window gets the same pair, and nothing is written', async (t) => {
        const app = await build(t, { postgresUrl: backend.url, env: setup.env })
        const account = await createAccount(app)
        const first = await login(app, account)
        const rotated = await refresh(app, first.refresh_token)
        t.equal(rotated.statusCode, 200)
        const before = await rows(app, account.id)
        const retried = await refresh(app, first.refresh_token)
        t.equal(retried.statusCode, 200)
        t.equal(retried.body, rotated.body, 'the pair of the rotation, again')
        t.same(await rows(app, account.id), before, 'no token, no session change')
        t.equal((await app.inject(withToken(retried.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'its access token works')
        const audited = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'auth.refresh').where('target_id', '=', account.id).execute()
        t.same(audited.map((row) => row.details).sort(), ['{"retry":true}', '{}'], 'the retry is audited as one')
        t.equal((await refresh(app, retried.json().data.refresh_token)).statusCode, 200, 'and its refresh token rotates')
      })

      t.test('reuse after the retry window revokes the whole session, and the kept pair is erased', async (t) => {
        const app = await build(t, { postgresUrl: backend.url, env: { ...setup.env, REFRESH_RETRY_WINDOW_S: '1' } })
        const account = await createAccount(app)
        const first = await login(app, account)
        const second = (await refresh(app, first.refresh_token)).json().data
        t.equal((await kept(app, account.id)).length, 1, 'the rotation is kept for retries')
        await new Promise((resolve) => setTimeout(resolve, 1100))
        const reused = await refresh(app, first.refresh_token)
        t.equal(reused.json().error.code, 'TOKEN_REUSED')
        t.equal((await refresh(app, second.refresh_token)).json().error.code, 'TOKEN_REUSED', 'the session ended')

        const other = await login(app, account)
        await refresh(app, other.refresh_token)
        t.equal((await kept(app, account.id)).length, 1)
        // Erased within another window once its own has passed; given more on a busy machine.
        const erased = async () => {
          while ((await kept(app, account.id)).length > 0) await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await t.resolves(within('the kept pair erased', 5000, erased()))
      })

      t.test('the kept pair is sealed under SEALING_KEY, whatever signs: another signing key answers the retry, another sealing key cannot', async (t) => {
        // All share JWT_SECRET; `moved` signs with another key (accepting the first), `resealed` seals with another.
        const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
        const key = generateKeyPair('EdDSA')
        const common = { ...setup.env, JWT_ALGORITHM: 'EdDSA', JWT_ISSUER: 'https://users.example.com', SEALING_KEY: 's'.repeat(40) }
        const app = await build(t, { databaseUrl, env: { ...common, JWT_PRIVATE_KEY: key.privateKey } })
        const moved = await build(t, { databaseUrl, env: { ...common, JWT_PRIVATE_KEY: generateKeyPair('EdDSA').privateKey, JWT_PREVIOUS_KEYS: key.publicKey } })
        const resealed = await build(t, { databaseUrl, env: { ...common, JWT_PRIVATE_KEY: key.privateKey, SEALING_KEY: 't'.repeat(40) } })
        const account = await createAccount(app)
        const first = await login(app, account)
        const rotated = await refresh(app, first.refresh_token)
        t.equal(rotated.statusCode, 200)
        const stored = await app.database.db.selectFrom('sessions').select('retry_pair').where('user_id', '=', account.id).where('retry_pair', 'is not', null).executeTakeFirstOrThrow()
        t.not(new SecretBox('s'.repeat(40), SEALED_PURPOSES.refreshRetry).open(stored.retry_pair ?? ''), null, 'sealed under SEALING_KEY')
        t.equal(new SecretBox(TEST_SECRET, SEALED_PURPOSES.refreshRetry).open(stored.retry_pair ?? ''), null, 'not under JWT_SECRET, once SEALING_KEY is set')
        t.equal((await refresh(moved, first.refresh_token)).body, rotated.body, 'an instance signing with another key answers the same pair')
        const refused = await refresh(resealed, first.refresh_token)
        t.equal(refused.json().error.code, 'TOKEN_REUSED', 'one with another sealing key cannot open it: reuse')
        t.equal((await refresh(app, rotated.json().data.refresh_token)).json().error.code, 'TOKEN_REUSED', 'which ended the session')
        const elapsed = await msUntil(async () => (await app.inject(withToken(rotated.json().data.access_token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode === 401, 2000)
        t.ok(elapsed <= 1000, `and the first instance refuses its access token after ${elapsed} ms`)
      })

      t.test('with REFRESH_RETRY_WINDOW_S=0 a spent token is reuse at once, and no pair is kept', async (t) => {
        const app = await build(t, { postgresUrl: backend.url, env: { ...setup.env, REFRESH_RETRY_WINDOW_S: '0' } })
        const account = await createAccount(app)
        const first = await login(app, account)
        const second = (await refresh(app, first.refresh_token)).json().data
        t.same(await kept(app, account.id), [], 'nothing kept')
        t.equal((await refresh(app, first.refresh_token)).json().error.code, 'TOKEN_REUSED')
        t.equal((await refresh(app, second.refresh_token)).json().error.code, 'TOKEN_REUSED', 'the session ended')
      })
    })
  }
}
