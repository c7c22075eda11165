import { sql } from 'kysely'
import t from 'tap'
import type { Database } from '../../src/store/database.js'
import { bindNamed } from '../../src/store/prepared.js'
import { type Rotation, rotationStatement, rotationSteps, rotationValues } from '../../src/store/session-rotation.js'
import { backends, queryPlan } from '../helpers/database.js'
import { migratedDatabase, recordingRepositories } from '../helpers/organizations.js'
import { insertChunked, planChecker } from '../helpers/query-plans.js'

/**
 * A refresh's rotation (SessionsRepository.rotate), on both databases: one statement on
 * PostgreSQL, steps on SQLite, with the same outcomes. Each outcome is checked in the rows:
 * a rotation spends the token, stores its successor and keeps the rotation on the session; a
 * rotation that finds the token spent, the session ended or the account gone writes nothing.
 */

const WATCHED = ['users', 'sessions', 'refresh_tokens'] as const
const { checkPlans, fullScans } = planChecker(WATCHED)

const NOW = '2026-01-01T00:00:00.000Z'
const LATER = '2026-01-01T00:05:00.000Z'
const userId = (index: number) => `00000000-0000-7000-8000-${String(index).padStart(12, '0')}`
const CUTOFFS = { idleBefore: '2025-01-01T00:00:00.000Z', createdBefore: '2025-01-01T00:00:00.000Z' }

/** 1,000 users, enough rows that PostgreSQL's statistics tell its indexes apart. */
async function seed ({ db }: Database) {
  await insertChunked(db, 'users', Array.from({ length: 1000 }, (_, index) => ({
    id: userId(index), email: `user-${index}@example.com`, name: `User ${index}`, email_verified: 1, created_at: NOW, updated_at: NOW
  })))
}

const issued = (name: string) => ({ token: name, jti: `jti-${name}`, token_hash: `hash-${name}`, expires_at: new Date('2026-02-01T00:00:00.000Z') })

for (const backend of backends()) {
  t.test(`refresh rotation (${backend.name})`, async (t) => {
    const database = await migratedDatabase(t, backend.url)
    const recorded = recordingRepositories(database)
    const { sessions } = recorded.repositories
    const { db } = database
    await seed(database)
    let opened = 0

    /** A session of the user with its first token (`jti-first-N`). */
    async function session (user: number) {
      const name = `first-${opened++}`
      const result = await sessions.open({
        userId: userId(user),
        device: { name: 'Laptop' },
        firstPair: { refresh: issued(name), accessJti: `access-${name}` },
        authorizationSessionUid: null,
        now: NOW,
        authentication: { authTime: NOW, amr: ['pwd'] },
        cutoffs: CUTOFFS,
        maxConcurrent: 10,
        accessIssuedAfter: NOW
      })
      if (result === undefined) throw new Error('the user exists')
      return { sessionId: result.id, jti: `jti-${name}` }
    }

    const rotation = (user: number, opened: { sessionId: string, jti: string }, next: string): Rotation => ({
      spentJti: opened.jti,
      sessionId: opened.sessionId,
      userId: userId(user),
      issued: issued(next),
      accessJti: `access-${next}`,
      device: { name: 'Laptop' },
      now: LATER,
      retry: { pair: `sealed-${next}`, until: '2026-01-01T00:05:10.000Z' },
      organizationId: null,
      entries: []
    })

    const sessionRow = async (id: string) => await db.selectFrom('sessions')
      .select(['last_used_at', 'retry_jti', 'retry_pair', 'retry_until', 'revoked_at']).where('id', '=', id).executeTakeFirstOrThrow()
    const tokens = async (sessionId: string) => await db.selectFrom('refresh_tokens')
      .select(['jti', 'spent_at', 'access_jti']).where('session_id', '=', sessionId).orderBy('jti').execute()

    t.test('a rotation spends the token, stores its successor and keeps the rotation on the session', async (t) => {
      const first = await session(1)
      t.equal(await sessions.rotate(rotation(1, first, 'second')), 'rotated')
      t.same(await tokens(first.sessionId), [
        { jti: 'jti-first-0', spent_at: LATER, access_jti: 'access-first-0' },
        { jti: 'jti-second', spent_at: null, access_jti: 'access-second' }
      ])
      t.same(await sessionRow(first.sessionId), {
        last_used_at: LATER, retry_jti: 'jti-first-0', retry_pair: 'sealed-second', retry_until: '2026-01-01T00:05:10.000Z', revoked_at: null
      })
      t.equal(await sessions.rotate(rotation(1, { sessionId: first.sessionId, jti: 'jti-second' }, 'third')), 'rotated', 'and its successor rotates in turn')
      t.equal((await sessionRow(first.sessionId)).retry_pair, 'sealed-third', 'the kept rotation replaced')
    })

    t.test('the rotation\'s audit entries are stored with it, and only when it rotated', async (t) => {
      const first = await session(9)
      const entry = (id: string) => ({
        id, event: 'auth.refresh', actor_id: userId(9), target_id: userId(9), ip: '192.0.2.1', user_agent: 'Agent/1.0', outcome: 'success', details: '{}', created_at: LATER
      })
      const stored = async () => await db.selectFrom('audit_logs').selectAll().where('actor_id', '=', userId(9)).orderBy('id').execute()
      const entries = [entry('01900000-0000-7000-8000-000000000001'), { ...entry('01900000-0000-7000-8000-000000000002'), event: 'auth.organization_selected', details: '{"organization_id":null}' }]
      t.equal(await sessions.rotate({ ...rotation(9, first, 'audited'), entries }), 'rotated')
      t.same(await stored(), entries, 'both entries, as given')
      t.equal(await sessions.rotate({ ...rotation(9, first, 'audited-lost'), entries: [entry('01900000-0000-7000-8000-000000000003')] }), 'lost')
      await sessions.revoke([first.sessionId], 'logout', NOW, NOW)
      const next = { sessionId: first.sessionId, jti: 'jti-audited' }
      t.equal(await sessions.rotate({ ...rotation(9, next, 'audited-ended'), entries: [entry('01900000-0000-7000-8000-000000000004')] }), 'ended')
      t.equal((await stored()).length, 2, 'none for a rotation lost or ended')
    })

    t.test('a token spent already is lost: nothing is written, the kept rotation stays', async (t) => {
      const first = await session(2)
      t.equal(await sessions.rotate(rotation(2, first, 'kept')), 'rotated')
      const before = await sessionRow(first.sessionId)
      t.equal(await sessions.rotate({ ...rotation(2, first, 'late'), now: '2026-01-01T00:09:00.000Z' }), 'lost')
      t.same(await sessionRow(first.sessionId), before, 'the session as the winning rotation left it')
      t.same((await tokens(first.sessionId)).map((row) => row.jti), [first.jti, 'jti-kept'], 'no successor stored')
    })

    if (database.dialect === 'postgres') {
      /** Resolves once another connection's statement containing `marker` waits on a lock. */
      const waitingOnLock = async (marker: string) => {
        for (let polls = 0; polls < 1000; polls++) {
          const { rows } = await sql<{ waiting: number }>`select count(*)::int as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock' and position(${marker} in query) > 0`.execute(db)
          if ((rows[0]?.waiting ?? 0) > 0) return
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        throw new Error(`no statement with ${marker} waited on a lock`)
      }

      t.test('a rotation waits for the account\'s row, held by a change that ends the session, and is ended', async (t) => {
        // As a new password, a suspension or a deletion do: the account's row first, then its sessions.
        const held = await session(7)
        const change = await db.startTransaction().execute()
        await sql`select id from users where id = ${userId(7)} for update`.execute(change)
        const rotating = sessions.rotate(rotation(7, held, 'during-change'))
        await waitingOnLock('"successor"')
        await sessions.revoke([held.sessionId], 'password_changed', NOW, NOW, change)
        await change.commit().execute()
        t.equal(await rotating, 'ended')
        t.same((await tokens(held.sessionId)).map((row) => row.jti), [held.jti], 'no successor stored')
      })

      t.test('a logout that waits for a rotation finds, to revoke, the access token it issued', async (t) => {
        const live = await session(8)
        const rotating = await db.startTransaction().execute()
        t.equal(await sessions.rotate(rotation(8, live, 'before-logout'), rotating), 'rotated')
        const logout = sessions.revoke([live.sessionId], 'logout', NOW, NOW)
        await waitingOnLock('"revoked_reason"')
        await rotating.commit().execute()
        // The first pair's access token was issued at NOW, not after it: only the new one is listed.
        t.same((await logout).map((token) => token.jti), ['access-before-logout'])
        t.equal((await sessionRow(live.sessionId)).revoked_at, NOW)
      })
    }

    t.test('a session ended ends the rotation: nothing is written', async (t) => {
      const ended = await session(3)
      await sessions.revoke([ended.sessionId], 'logout', NOW, NOW)
      const before = await sessionRow(ended.sessionId)
      t.equal(await sessions.rotate(rotation(3, ended, 'after-logout')), 'ended')
      t.same(await sessionRow(ended.sessionId), before)
      t.same((await tokens(ended.sessionId)).map((row) => row.spent_at), [null], 'the token not spent')
    })

    t.test('the read before a rotation finds the token by its hash, with its session and the account\'s roles', async (t) => {
      const first = await session(6)
      await db.insertInto('user_roles').values([
        { user_id: userId(6), role: 'admin', created_at: NOW }, { user_id: userId(6), role: 'moderator', created_at: NOW }
      ]).execute()
      await checkPlans(t, database, recorded, 'refresh_tokens', async () => {
        const presented = await sessions.findByTokenHash(`hash-${first.jti.slice('jti-'.length)}`)
        t.match(presented, { jti: first.jti, userId: userId(6), sessionId: first.sessionId, spentAt: null })
        t.same([...presented?.userRoles ?? []].sort(), ['admin', 'moderator'])
      }, database.dialect === 'sqlite' ? /USING INDEX sqlite_autoindex_refresh_tokens_\d \(token_hash=\?\)/ : /refresh_tokens_token_hash_key/)
      t.same((await sessions.findByTokenHash('hash-first-0'))?.userRoles, [], 'an account with no role')
    })

    t.test('the rotation finds the account, the session and the token by their keys', async (t) => {
      const planned = rotation(5, await session(5), 'planned')
      const values = rotationValues(planned)
      if (database.dialect === 'sqlite') {
        // Its steps, each compiled once with placeholders: their plans with this rotation's values.
        const { hold, live, spend, kept } = rotationSteps(db)
        for (const [step, index] of [[hold, 'users'], [live, 'sessions'], [spend, 'refresh_tokens'], [kept, 'sessions']] as const) {
          const plan = await queryPlan(database, index, { compile: () => bindNamed(step, values) })
          t.same(fullScans(plan, step.sql, database.dialect), [], plan)
          t.match(plan, new RegExp(`SEARCH ${index} USING (INTEGER PRIMARY KEY|INDEX sqlite_autoindex_${index}_1)`), step.sql)
        }
        t.equal(await sessions.rotate(planned), 'rotated', 'and the steps run')
        return
      }
      // One statement, compiled once with placeholders: its plan with this rotation's values.
      const plan = await queryPlan(database, 'refresh_tokens', { compile: () => bindNamed(rotationStatement(db, true).compile(), values) })
      t.same(fullScans(plan, '', database.dialect), [], plan)
      for (const index of [/users_pkey/, /sessions_pkey/, /refresh_tokens_pkey/]) t.match(plan, index)
      t.equal(await sessions.rotate(planned), 'rotated', 'and the statement runs')
    })
  })
}
