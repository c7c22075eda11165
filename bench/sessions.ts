import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config/index.js'
import { openDatabase } from '../src/store/database.js'
import { migrateToLatest } from '../src/store/migrations/index.js'
import type { Report } from './algorithms.js'
import {
  type Backend, backends, CONNECTIONS, cpuShare, json, JWT_SECRET, loadAverage, load, type Measured, medians, perCore,
  ROUNDS, serviceEnv, START_FLAGS, start, stop, WARM_UP_SECONDS
} from './harness.js'

/**
 * Sessions under load (docs/performance.md, "Sessions: refreshes and revocations"), on two
 * back ends: SQLite without Redis (the revocation list in memory, as on one instance) and
 * PostgreSQL with Redis (as several instances run: rate limits in Redis, revocations published
 * through it). On each:
 * - the authenticated read of run.ts (`GET /api/v1/users/{id}`) on a service whose revocation
 *   list holds REVOKED access-token ids, against the same read on a service holding none, in
 *   interleaved rounds, medians compared;
 * - `POST /api/v1/auth/refresh`, each connection rotating the refresh token of its own session
 *   (one account each), so every request spends a live token and records a new pair: the path
 *   of rotation and reuse detection, not of the retry window. Reported per core of the server
 *   beside Keycloak's published sizing.
 */

/**
 * Keycloak's documentation, "Concepts for sizing CPU and memory resources" (High Availability
 * guide): "For each 120 refresh token requests per second, 1 vCPU to the cluster".
 */
const KEYCLOAK_REFRESHES_PER_VCPU = 120
/** Refreshes per core of the server, as a multiple of Keycloak's per vCPU (docs/performance.md). */
const REFRESH_TARGET = 10
const REVOKED = 100_000
/** The read with REVOKED revocations against the read with none (docs/performance.md). */
const REVOKED_READ_TARGET = 0.9
const PASSWORD = 'bench-password-1'
/** How many accounts are registered and signed in at once while preparing. */
const PREPARING_CONCURRENCY = 8

/** One connection's session: its current refresh token, and whether a rotation of it is unanswered. */
export interface Session { token: string, inFlight: boolean }

/**
 * Migrates the database and fills `revoked_tokens` with `count` random access-token ids, live
 * for an hour (the list drops an expired id, and a run outlasts the 15 minutes of a real
 * one): the service loads them at start-up, as after a restart.
 */
async function revoke (databaseUrl: string, count: number): Promise<void> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, JWT_SECRET }).database)
  try {
    await migrateToLatest(database.db, database.dialect)
    const now = new Date()
    const expiresAt = new Date(now.getTime() + 60 * 60 * 1000).toISOString()
    await database.db.transaction().execute(async (trx) => {
      for (let done = 0; done < count; done += 1000) {
        const rows = Array.from({ length: Math.min(1000, count - done) }, () =>
          ({ jti: randomBytes(16).toString('base64url'), expires_at: expiresAt, created_at: now.toISOString() }))
        await trx.insertInto('revoked_tokens').values(rows).execute()
      }
    })
  } finally {
    await database.close()
  }
}

/** `count` accounts registered and each signed in once, PREPARING_CONCURRENCY at a time. */
export async function signedInSessions (base: string, count: number): Promise<Session[]> {
  const sessions: Session[] = []
  let next = 0
  await Promise.all(Array.from({ length: PREPARING_CONCURRENCY }, async () => {
    while (next < count) {
      const email = `refresher-${next++}@example.com`
      await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email, name: 'Refresher', password: PASSWORD }) })
      const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email, password: PASSWORD }) })
      sessions.push({ token: String(login.data.refresh_token), inFlight: false })
    }
  }))
  return sessions
}

/**
 * autocannon's options for refreshing `sessions`, one per connection. Its context is reset after
 * each request (a single-request pipeline restarts each time), so each connection's token is
 * held by `setupClient`'s closure instead: sent by `setupRequest`, replaced from the answer.
 */
export function rotating (base: string, sessions: Session[]): autocannon.Options {
  let connection = 0
  return {
    url: `${base}/api/v1/auth/refresh`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    setupClient: (client) => {
      const session = sessions[connection++ % sessions.length] as Session
      client.setRequests([{
        setupRequest: (request) => {
          session.inFlight = true
          return { ...request, body: JSON.stringify({ refresh_token: session.token }) }
        },
        onResponse: (status, body) => {
          session.inFlight = false
          if (status !== 200) return
          session.token = String((JSON.parse(body) as { data: { refresh_token: string } }).data.refresh_token)
        }
      }])
    }
  }
}

/**
 * A run ends with requests unanswered: the server may have rotated their tokens. Sending each
 * again, within the retry window, gets its pair either way (docs/api.md, "Sessions"), so the
 * next run starts from live tokens rather than ending those sessions as reused.
 */
export async function resume (base: string, sessions: Session[]): Promise<void> {
  await Promise.all(sessions.filter((session) => session.inFlight).map(async (session) => {
    const answer = await json(`${base}/api/v1/auth/refresh`, { method: 'POST', body: JSON.stringify({ refresh_token: session.token }) })
    session.token = String(answer.data.refresh_token)
    session.inFlight = false
  }))
}

/** The account to read and a bearer token to read it with. */
async function reader (base: string): Promise<{ path: string, headers: Record<string, string> }> {
  const created = await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'reader@example.com', name: 'Reader', password: PASSWORD }) })
  const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: 'reader@example.com', password: PASSWORD }) })
  return { path: `/api/v1/users/${String(created.data.id)}`, headers: { authorization: `Bearer ${String(login.data.access_token)}` } }
}

async function benchBackend (backend: Backend, dir: string, report: Report): Promise<void> {
  const serve = async (label: string, revocations: number) => {
    const databaseUrl = await backend.database(label)
    if (revocations > 0) await revoke(databaseUrl, revocations)
    return await start([...START_FLAGS, 'dist/src/server.js'], { ...serviceEnv(join(dir, 'unused.db')), ...backend.env, DATABASE_URL: databaseUrl }, join(dir, `sessions-${label}.log`))
  }
  const plain = await serve('plain', 0)
  const revoked = await serve('revoked', REVOKED)
  try {
    const sides = [
      { service: plain, reads: [] as Measured[], ...await reader(plain.base) },
      { service: revoked, reads: [] as Measured[], ...await reader(revoked.base) }
    ]
    const read = (side: typeof sides[number]) => ({ url: side.service.base + side.path, headers: side.headers })
    for (const side of sides) await autocannon({ ...read(side), connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    const loads: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      loads.push(loadAverage())
      // Each round in the other order from the last: the machine's speed drifts.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        side.reads.push(await load(read(side), side.service.child.pid))
      }
    }
    const [without, withRevoked] = sides.map((side) => medians(side.reads)) as [Measured, Measured]
    const ratio = withRevoked.rps / without.rps
    report(`GET /api/v1/users/{id} (authenticated), ${REVOKED.toLocaleString('en')} access tokens revoked vs none, ${backend.name}`, ratio,
      `≥ ${REVOKED_READ_TARGET} × none revoked`, ratio >= REVOKED_READ_TARGET,
      `${withRevoked.rps.toFixed(0)} vs ${without.rps.toFixed(0)} req/s; p99 ${withRevoked.p99} vs ${without.p99} ms; ` +
      `server CPU per request ${withRevoked.cpuUs.toFixed(1)} vs ${without.cpuUs.toFixed(1)} µs (× ${(withRevoked.cpuUs / without.cpuUs).toFixed(2)}); ` +
      `load average ${loads.join(', ')} at the rounds' starts`)
    await stop(revoked.child)

    const sessions = await signedInSessions(plain.base, CONNECTIONS)
    const refresh = rotating(plain.base, sessions)
    await autocannon({ ...refresh, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    await resume(plain.base, sessions)
    const refreshes: Measured[] = []
    loads.length = 0
    for (let round = 0; round < ROUNDS; round++) {
      loads.push(loadAverage())
      refreshes.push(await load(refresh, plain.child.pid))
      await resume(plain.base, sessions)
    }
    const rotated = medians(refreshes)
    const multiple = perCore(rotated.cpuUs) / KEYCLOAK_REFRESHES_PER_VCPU
    report(`POST /api/v1/auth/refresh, each connection rotating its own session, ${backend.name}`, multiple,
      `≥ ${REFRESH_TARGET} × Keycloak's ${KEYCLOAK_REFRESHES_PER_VCPU} refreshes/s per vCPU, per core`, multiple >= REFRESH_TARGET,
      `${rotated.rps.toFixed(0)} req/s; p50 ${rotated.p50} ms, p99 ${rotated.p99} ms; ${cpuShare(rotated, 'refreshes')}; ` +
      `load average ${loads.join(', ')} at the rounds' starts`)
  } finally {
    await stop(plain.child)
    await stop(revoked.child)
    for (const label of ['plain', 'revoked']) await backend.drop(label)
  }
}

/** Both back ends, SQLite first. */
export async function benchSessions (dir: string, report: Report): Promise<void> {
  for (const backend of backends(dir, 'bench_sessions')) await benchBackend(backend, dir, report)
}
