import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { recentRevocations } from '../../../src/store/revocations.js'
import { createAccount, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl, queryPlan } from '../../helpers/database.js'

const redisUrl = process.env.TEST_REDIS_URL
const redisEnv: Record<string, string> = redisUrl !== undefined && redisUrl !== '' ? { REDIS_URL: redisUrl } : {}

function me (app: FastifyInstance, token: string) {
  return app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))
}

for (const backend of backends()) {
  t.test(`${backend.name}${redisUrl === undefined ? '' : ' + redis'}`, async (t) => {
    t.test('a token revoked on one instance is refused by another within 1 second', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const first = await build(t, { databaseUrl, env: redisEnv })
      const second = await build(t, { databaseUrl, env: redisEnv })
      const account = await createAccount(first)
      t.equal((await me(second, account.token)).statusCode, 200, 'valid on both before')
      t.equal((await first.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/logout' }))).statusCode, 204)
      const elapsed = await msUntil(async () => (await me(second, account.token)).statusCode === 401, 2000)
      t.ok(elapsed <= 1000, `refused by the other instance after ${elapsed} ms`)
    })

    t.test('the poll reads by revocation time, from the created_at index, not every unexpired revocation', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const account = await createAccount(app)
      t.equal((await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/logout' }))).statusCode, 204)
      const plan = await queryPlan(app.database, 'revoked_tokens', recentRevocations(app.database.db, new Date().toISOString()))
      // A range on the index: SQLite's "(created_at>?)", PostgreSQL's "Index Cond: (created_at >= …".
      t.match(plan, /revoked_tokens_created_at.*(\(created_at>\?\)|Index Cond: \(created_at >=)/s, plan)
    })

    t.test('the poll takes revocations made elsewhere, and skips those already expired', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const now = Date.now()
      const rows = [
        { jti: 'expired-elsewhere', expires_at: new Date(now - 1000).toISOString(), created_at: new Date(now).toISOString() },
        { jti: 'live-elsewhere', expires_at: new Date(now + 60_000).toISOString(), created_at: new Date(now).toISOString() }
      ]
      await app.database.db.insertInto('revoked_tokens').values(rows).execute()
      await msUntil(async () => app.revocations.isRevoked('live-elsewhere'), 2000)
      t.ok(app.revocations.isRevoked('live-elsewhere'), 'taken within 2 s (polls every 500 ms)')
      t.notOk(app.revocations.isRevoked('expired-elsewhere'), 'an expired one is not held')
    })

    t.test('a revoked token stays refused after a restart', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const before = await build(t, { databaseUrl, env: redisEnv })
      const account = await createAccount(before)
      await before.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/logout' }))
      await before.close()
      const after = await build(t, { databaseUrl, env: redisEnv })
      const response = await me(after, account.token)
      t.equal(response.statusCode, 401)
      t.equal(response.json().error.code, 'INVALID_TOKEN')
    })

    t.test('revocation entries expire with their token', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const now = new Date().toISOString()
      await app.repositories.revocations.add('expired-jti', new Date(Date.now() - 1000).toISOString(), now)
      await app.repositories.revocations.add('live-jti', new Date(Date.now() + 60_000).toISOString(), now)
      await app.repositories.revocations.purgeExpired(new Date().toISOString())
      const left = await app.database.db.selectFrom('revoked_tokens').select('jti').execute()
      t.same(left, [{ jti: 'live-jti' }])
    })
  })
}
