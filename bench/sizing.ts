import { pbkdf2 } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config/index.js'
import { PasswordHasher, PBKDF2_ROUNDS } from '../src/security/passwords.js'
import { openDatabase } from '../src/store/database.js'
import { uuidv7 } from '../src/store/ids.js'
import { migrateToLatest } from '../src/store/migrations/index.js'
import type { Report } from './algorithms.js'
import { type AuthorizationServerCapacity, authorizationServerEnv, measureAuthorizationServer } from './authorization-server.js'
import { freePort } from './free-port.js'
import {
  type Backend, backends, CONNECTIONS, cpuShare, json, JWT_SECRET, load, machine, type Measured, median, medians,
  perCore, ROUNDS, SECONDS, serviceEnv, START_FLAGS, start, stop, WARM_UP_SECONDS
} from './harness.js'
import { resume, rotating, signedInSessions } from './sessions.js'

/**
 * Capacity in Keycloak's terms (docs/performance.md, "Sizing"): on each back end, one service
 * (compiled, as `npm start` runs it) holding LIVE_SESSIONS live sessions, measured per core of
 * the server (1 s of its CPU over its CPU per request: robust to the load generator sharing the
 * machine), beside the figures Keycloak publishes per vCPU:
 * - password sign-ins, against PBKDF2 at the configured cost on one core, in the same rounds;
 * - refreshes, each connection rotating its own session;
 * - client-credential grants, and sign-ins at a relying party (a code made and redeemed);
 * - the authenticated read (`GET /api/v1/users/{id}`);
 * - the resident memory (RSS) of the instance at the end, and its peak.
 * Answers the table's rows, in Keycloak's format, for bench/RESULTS.md.
 */

/**
 * Keycloak's documentation, "Concepts for sizing CPU and memory resources" (High Availability
 * guide): per vCPU, "15 password-based user logins per second", "120 client credential grants
 * per second", "120 refresh token requests per second"; "1250 MB" of memory per Pod.
 */
const KEYCLOAK = { signIns: 15, grants: 120, refreshes: 120, memoryMb: 1250 }
/** Sessions open through the whole measurement, as after a busy day (docs/performance.md). */
const LIVE_SESSIONS = 10_000
/** Targets of the table (docs/performance.md, "Sizing"). */
const TARGETS = { signInsOfPbkdf2: 0.9, ofKeycloak: 10, memoryOfKeycloak: 1 / 5 }
const PASSWORD = 'bench-password-1'
/**
 * The cost of the live sessions' stored hashes: opening LIVE_SESSIONS sessions at the configured
 * cost would take minutes of hashing. The sign-in path is the same; only its hash is cheaper.
 */
const SEEDED_ROUNDS = 1000
const SIGNING_IN_CONCURRENCY = 16
/**
 * The accounts the sign-in rows take in turn, at the configured cost: enough that none reaches
 * SESSION_MAX_CONCURRENT's 3 live sessions in a run (a few thousand sign-ins), so that no
 * sign-in also ends the account's oldest session, as one account signing in over and over did
 * (seven statements more a sign-in). Keycloak's figure counts sign-ins of distinct users.
 */
const SIGNING_IN_ACCOUNTS = 3000

/**
 * Hashes per second of CPU PBKDF2 at the configured cost takes, one derivation at a time in this
 * process (idle but for it): counted in CPU time, as the server's figures are.
 */
async function pbkdf2PerCore (): Promise<number> {
  const derive = promisify(pbkdf2)
  let done = 0
  const began = performance.now()
  const cpuBefore = process.cpuUsage()
  while (performance.now() - began < SECONDS * 1000) {
    await derive('benchmark-password', 'salt-salt-salt-1', PBKDF2_ROUNDS, 32, 'sha256')
    done++
  }
  const { user, system } = process.cpuUsage(cpuBefore)
  return done / ((user + system) / 1_000_000)
}

/**
 * Accounts written directly to the database, `<prefix>-<n>@example.com`: one hash of PASSWORD at
 * `rounds`, stored for each (verifying it still costs each sign-in a whole derivation).
 */
interface SeededAccounts { prefix: string, count: number, rounds: number }

/** Migrates the database and adds each group of accounts. */
async function seedAccounts (databaseUrl: string, groups: SeededAccounts[]): Promise<void> {
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, JWT_SECRET }).database)
  try {
    await migrateToLatest(database.db, database.dialect)
    const now = new Date().toISOString()
    for (const { prefix, count, rounds } of groups) {
      const passwordHash = await new PasswordHasher({ rounds, concurrency: 1, queueLimit: 1 }).hash(PASSWORD)
      for (let done = 0; done < count; done += 1000) {
        const rows = Array.from({ length: Math.min(1000, count - done) }, (_, index) => ({
          id: uuidv7(),
          email: `${prefix}-${done + index}@example.com`,
          name: 'Seeded',
          password_hash: passwordHash,
          totp_enabled_at: null,
          email_verified: 1,
          claimed_at: now,
          created_at: now,
          updated_at: now
        }))
        await database.db.insertInto('users').values(rows).execute()
      }
    }
  } finally {
    await database.close()
  }
}

/** Signs each seeded account in once through the API: `count` sessions open. */
async function openLiveSessions (base: string, count: number): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: SIGNING_IN_CONCURRENCY }, async () => {
    while (next < count) {
      await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: `live-${next++}@example.com`, password: PASSWORD }) })
    }
  }))
}

/** The process's resident memory now and at its peak, in MB. */
function memoryMb (pid: number): { now: number, peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0)
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

/** One back end's figures, per core of the server. */
interface Capacity extends AuthorizationServerCapacity {
  backend: string
  signIns: number
  pbkdf2: number
  refreshes: number
  reads: number
  memory: { now: number, peak: number }
}

async function measureBackend (backend: Backend, dir: string, report: Report): Promise<Capacity> {
  const databaseUrl = await backend.database('sizing')
  const suffix = `, ${backend.name}, ${LIVE_SESSIONS.toLocaleString('en')} live sessions`
  await seedAccounts(databaseUrl, [
    { prefix: 'live', count: LIVE_SESSIONS, rounds: SEEDED_ROUNDS },
    { prefix: 'signing-in', count: SIGNING_IN_ACCOUNTS, rounds: PBKDF2_ROUNDS }
  ])
  const port = await freePort()
  const service = await start([...START_FLAGS, 'dist/src/server.js'],
    { ...serviceEnv(join(dir, 'unused.db')), ...backend.env, ...authorizationServerEnv(port), DATABASE_URL: databaseUrl },
    join(dir, `sizing-${backend.name.replaceAll(/\W+/g, '-')}.log`))
  const pid = service.child.pid
  try {
    await openLiveSessions(service.base, LIVE_SESSIONS)

    // Sign-ins: the SIGNING_IN_ACCOUNTS in turn, rounds alternating with PBKDF2 alone.
    let signingIn = 0
    const signIn: autocannon.Options = {
      url: `${service.base}/api/v1/auth/login`,
      method: 'POST',
      connections: 8,
      headers: { 'content-type': 'application/json' },
      requests: [{
        setupRequest: (request) => ({
          ...request, body: JSON.stringify({ email: `signing-in-${signingIn++ % SIGNING_IN_ACCOUNTS}@example.com`, password: PASSWORD })
        })
      }]
    }
    await autocannon({ ...signIn, duration: WARM_UP_SECONDS })
    const hashRates: number[] = []
    const signIns: Measured[] = []
    for (let round = 0; round < ROUNDS; round++) {
      hashRates.push(await pbkdf2PerCore())
      signIns.push(await load(signIn, pid))
    }
    const signInSide = medians(signIns)
    const pbkdf2 = median(hashRates)
    const signInsPerCore = perCore(signInSide.cpuUs)
    report(`POST /api/v1/auth/login per core${suffix}`, signInsPerCore / pbkdf2, `≥ ${TARGETS.signInsOfPbkdf2} × PBKDF2 per core`,
      signInsPerCore / pbkdf2 >= TARGETS.signInsOfPbkdf2,
      `${signInsPerCore.toFixed(1)} sign-ins/s per core vs ${pbkdf2.toFixed(1)} hashes per second of CPU (${PBKDF2_ROUNDS.toLocaleString('en')} rounds); ` +
      `× ${(signInsPerCore / KEYCLOAK.signIns).toFixed(1)} Keycloak's ${KEYCLOAK.signIns} per vCPU; ${signInSide.rps.toFixed(1)} req/s, p99 ${signInSide.p99} ms`)

    // The authenticated read.
    const email = 'sizing@example.com'
    const created = await json(`${service.base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email, name: 'Sizing', password: PASSWORD }) })
    const login = await json(`${service.base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email, password: PASSWORD }) })
    const read: autocannon.Options = {
      url: `${service.base}/api/v1/users/${String(created.data.id)}`,
      headers: { authorization: `Bearer ${String(login.data.access_token)}` }
    }
    await autocannon({ ...read, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    const reads: Measured[] = []
    for (let round = 0; round < ROUNDS; round++) reads.push(await load(read, pid))
    const readSide = medians(reads)
    report(`GET /api/v1/users/{id} (authenticated) per core${suffix}`, perCore(readSide.cpuUs), 'reported (reads/s per core)', true,
      `${readSide.rps.toFixed(0)} req/s; p50 ${readSide.p50} ms, p99 ${readSide.p99} ms; ${cpuShare(readSide, 'reads')}`)

    // Refreshes, each connection rotating its own session.
    const sessions = await signedInSessions(service.base, CONNECTIONS)
    const refresh = rotating(service.base, sessions)
    await autocannon({ ...refresh, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    await resume(service.base, sessions)
    const refreshes: Measured[] = []
    for (let round = 0; round < ROUNDS; round++) {
      refreshes.push(await load(refresh, pid))
      await resume(service.base, sessions)
    }
    const refreshSide = medians(refreshes)
    const refreshesPerCore = perCore(refreshSide.cpuUs)
    report(`POST /api/v1/auth/refresh per core${suffix}`, refreshesPerCore / KEYCLOAK.refreshes,
      `≥ ${TARGETS.ofKeycloak} × Keycloak's ${KEYCLOAK.refreshes} per vCPU`, refreshesPerCore / KEYCLOAK.refreshes >= TARGETS.ofKeycloak,
      `${refreshSide.rps.toFixed(0)} req/s; p50 ${refreshSide.p50} ms, p99 ${refreshSide.p99} ms; ${cpuShare(refreshSide, 'refreshes')}`)

    const authorizationServer = await measureAuthorizationServer(service.base, pid, report, suffix)
    report(`POST /oidc/token, client_credentials per core${suffix}`, authorizationServer.grantsPerCore / KEYCLOAK.grants,
      `≥ ${TARGETS.ofKeycloak} × Keycloak's ${KEYCLOAK.grants} per vCPU`, authorizationServer.grantsPerCore / KEYCLOAK.grants >= TARGETS.ofKeycloak,
      `${authorizationServer.grantsPerCore.toFixed(0)} grants/s per core`)

    const memory = memoryMb(pid ?? 0)
    report(`RSS of the instance${suffix}, after the measurements above`, memory.peak / KEYCLOAK.memoryMb,
      `≤ ${TARGETS.memoryOfKeycloak.toFixed(2)} × Keycloak's ${KEYCLOAK.memoryMb} MB per pod, at its peak`, memory.peak <= TARGETS.memoryOfKeycloak * KEYCLOAK.memoryMb,
      `${memory.now.toFixed(0)} MB at the end, ${memory.peak.toFixed(0)} MB at the peak`)
    return {
      backend: backend.name,
      signIns: signInsPerCore,
      pbkdf2,
      refreshes: refreshesPerCore,
      reads: perCore(readSide.cpuUs),
      memory,
      ...authorizationServer
    }
  } finally {
    await stop(service.child)
    await backend.drop('sizing')
  }
}

/** `value` per vCPU, and as a multiple of Keycloak's `theirs`. */
const cell = (value: number, theirs: number) => `${value.toFixed(0)} (× ${(value / theirs).toFixed(1)})`

/**
 * Both back ends measured; answers the sizing table in Keycloak's format (its figure per vCPU
 * beside each back end's per core of this machine) and the line to size a deployment with.
 */
export async function benchSizing (dir: string, report: Report): Promise<string[]> {
  const measured: Capacity[] = []
  for (const backend of backends(dir, 'bench_sizing')) measured.push(await measureBackend(backend, dir, report))
  const columns = measured.map((capacity) => capacity.backend)
  const row = (what: string, keycloak: string, cells: (capacity: Capacity) => string) =>
    `| ${what} | ${keycloak} | ${measured.map(cells).join(' | ')} |`
  const slowest = (figure: (capacity: Capacity) => number) => Math.min(...measured.map(figure))
  return [
    '',
    `Sizing, per vCPU (one core of ${machine()}), each back end holding ${LIVE_SESSIONS.toLocaleString('en')} live sessions; ` +
      'in brackets, the multiple of Keycloak\'s figure:',
    '',
    `| per vCPU | Keycloak | ${columns.join(' | ')} |`,
    `|---|---|${columns.map(() => '---|').join('')}`,
    row('password sign-ins/s', String(KEYCLOAK.signIns), (capacity) =>
      `${capacity.signIns.toFixed(1)} (× ${(capacity.signIns / KEYCLOAK.signIns).toFixed(1)}; PBKDF2 alone ${capacity.pbkdf2.toFixed(1)})`),
    row('refreshes/s', String(KEYCLOAK.refreshes), (capacity) => cell(capacity.refreshes, KEYCLOAK.refreshes)),
    row('client-credential grants/s', String(KEYCLOAK.grants), (capacity) => cell(capacity.grantsPerCore, KEYCLOAK.grants)),
    row('authorization-code sign-ins at a relying party/s', '—', (capacity) => capacity.signInsPerCore.toFixed(0)),
    row('authenticated reads/s', '—', (capacity) => capacity.reads.toFixed(0)),
    row('memory per instance (RSS, peak)', `${KEYCLOAK.memoryMb} MB per pod`, (capacity) => `${capacity.memory.peak.toFixed(0)} MB`),
    '',
    `To size: vCPUs = password sign-ins/s ÷ ${slowest((capacity) => capacity.signIns).toFixed(0)} + refreshes/s ÷ ` +
      `${slowest((capacity) => capacity.refreshes).toFixed(0)} + client-credential grants/s ÷ ` +
      `${slowest((capacity) => capacity.grantsPerCore).toFixed(0)} + relying-party sign-ins/s ÷ ` +
      `${slowest((capacity) => capacity.signInsPerCore).toFixed(0)}, plus headroom; memory = instances × ` +
      `${Math.max(...measured.map((capacity) => capacity.memory.peak)).toFixed(0)} MB (the slower back end's figures, on this CPU).`
  ]
}
