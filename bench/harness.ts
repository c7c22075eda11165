import { execSync, spawn, type ChildProcess } from 'node:child_process'
import { openSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { DatabaseSchema } from '../src/store/types.js'
import { freePort } from './free-port.js'

/** What the benchmarks share: starting and stopping servers, one measurement, medians. */

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 4)
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
export const WARM_UP_SECONDS = 3
export const CONNECTIONS = 32

/** Throughput, latency, and the server's CPU time per request in microseconds (0 when not measured). */
export interface Measured { rps: number, p50: number, p99: number, cpuUs: number }

/** The PostgreSQL the benchmarks use, a schema of its own for each database they make. */
export const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
/**
 * The Redis the benchmarks use. Its own database number: the service's keys have fixed
 * prefixes, and tests may use the same server's database 0 at the same time.
 */
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/9'

/** The repository, from dist/bench/ where this runs compiled. */
export const ROOT = join(import.meta.dirname, '..', '..')

/** Node's flags from `npm start` (the heap budget), so the bench runs the service as it is run. */
export const START_FLAGS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
  .scripts.start.split(' ').filter((word) => word.startsWith('--'))

/** The signing secret of every service the benchmarks start. */
export const JWT_SECRET = 'bench-secret-bench-secret-bench-secret'

/** The service's environment under load: SQLite at `databasePath`, every protection on. */
export function serviceEnv (databasePath: string): Record<string, string> {
  return {
    DATABASE_URL: `sqlite://${databasePath}`,
    JWT_SECRET,
    CORS_ORIGINS: 'http://localhost',
    // Every protection stays on; the limits are set out of reach so the store still counts.
    // A 1 s window keeps the sliding log (one entry per admitted request) at a realistic size:
    // with a 60 s window and an unreachable limit it would hold every request of the last minute.
    RATE_LIMIT_MAX: '1000000000',
    RATE_LIMIT_AUTH_MAX: '1000000000',
    RATE_LIMIT_WINDOW_MS: '1000',
    MFA_REQUIRED_ROLES: 'none',
    LOG_LEVEL: 'info'
  }
}

/**
 * Starts a server (in `cwd`, this process's by default) with its output going to a file:
 * piped back to this process, two log lines per request would tax the load generator, not
 * the server. It listens on `env.PORT` when given (a server that must know its own address
 * beforehand, such as an issuer), on a free port otherwise.
 */
export async function start (
  command: string[],
  env: Record<string, string>,
  logFile: string,
  cwd?: string
): Promise<{ child: ChildProcess, base: string }> {
  const port = env.PORT === undefined ? await freePort() : Number(env.PORT)
  const output = openSync(logFile, 'a')
  const child = spawn(process.execPath, command, { cwd, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', output, 'inherit'] })
  const base = `http://127.0.0.1:${port}`
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${base}/health`)).ok) break
    } catch {
      if (attempt > 300) throw new Error(`${command.join(' ')} did not start`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { child, base }
}

/** The CPU model and how many cores Node sees: figures from different machines are not one series. */
export function machine (): string {
  return `${cpus()[0]?.model ?? 'unknown CPU'} × ${cpus().length}`
}

/** The 1-minute load average: on the shared machine, how much else was running. */
export function loadAverage (): string {
  return (loadavg()[0] ?? 0).toFixed(2)
}

/** Requests per second one core of the server would answer: 1 s of CPU over the CPU per request. */
export function perCore (cpuUs: number): number {
  return cpuUs > 0 ? 1_000_000 / cpuUs : 0
}

/** A measurement's CPU per request, as cores used and requests per core (the figures robust to contention). */
export function cpuShare ({ rps, cpuUs }: Measured, unit: string): string {
  return `server CPU per request ${cpuUs.toFixed(0)} µs, so ${(rps * cpuUs / 1_000_000).toFixed(2)} cores used and ` +
    `${perCore(cpuUs).toFixed(0)} ${unit}/s per core`
}

async function onPostgres (statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

/** `schema` made anew in POSTGRES_URL; the URL of a database whose tables go there. */
export async function freshPostgresSchema (schema: string): Promise<string> {
  await dropPostgresSchema(schema)
  await onPostgres(`create schema ${schema}`)
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

export async function dropPostgresSchema (schema: string): Promise<void> {
  await onPostgres(`drop schema if exists ${schema} cascade`)
}

/** Where a benchmark keeps the service's data: SQLite alone, or PostgreSQL with Redis. */
export interface Backend {
  name: string
  /** A fresh database for one service (`label` tells them apart); its DATABASE_URL. */
  database: (label: string) => Promise<string>
  env: Record<string, string>
  /** Removes what `database` made outside the run's folder. */
  drop: (label: string) => Promise<void>
}

/**
 * The two back ends, SQLite first: SQLite files in `dir` without Redis (as one instance runs),
 * and PostgreSQL schemas named `<prefix>_<label>` with Redis (as several instances run: rate
 * limits in Redis, revocations published through it).
 */
export function backends (dir: string, prefix: string): Backend[] {
  const schema = (label: string) => `${prefix}_${label}`
  return [
    { name: 'SQLite', database: async (label) => `sqlite://${join(dir, `${prefix}-${label}.db`)}`, env: {}, drop: async () => {} },
    {
      name: 'PostgreSQL + Redis',
      database: async (label) => await freshPostgresSchema(schema(label)),
      env: { REDIS_URL },
      drop: async (label) => { await dropPostgresSchema(schema(label)) }
    }
  ]
}

export async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/** CPU time (user + system) the process has used, in microseconds: /proc/<pid>/stat counts clock ticks of 10 ms. */
export function cpuMicros (pid: number | undefined): number {
  if (pid === undefined) return 0
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/**
 * One measurement. With the server's pid, also its CPU time per request: on a machine the
 * load generator shares, this tells what a request costs the server, whatever the
 * throughput the load generator left it.
 */
export async function load (options: autocannon.Options, serverPid?: number): Promise<Measured> {
  const cpuBefore = cpuMicros(serverPid)
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${options.url}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  const cpuUs = result.requests.total > 0 ? (cpuMicros(serverPid) - cpuBefore) / result.requests.total : 0
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, cpuUs }
}

export async function json (url: string, init: RequestInit = {}): Promise<any> {
  const response = await fetch(url, { ...init, headers: { 'content-type': 'application/json', ...init.headers } })
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return response.status === 204 ? null : await response.json()
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

/** A side's rounds as one: each figure its own median. */
export const medians = (rounds: Measured[]): Measured => ({
  rps: median(rounds.map((round) => round.rps)),
  p50: median(rounds.map((round) => round.p50)),
  p99: median(rounds.map((round) => round.p99)),
  cpuUs: median(rounds.map((round) => round.cpuUs))
})

/**
 * The commit measured, read when a run starts (the build just made), and whether the service's
 * sources (src/, schemas/) had changes beyond it: a heading must name what was measured, not
 * what HEAD became by the end of the run. Run as `node dist/bench/….js`, the build may be older
 * than the service's sources (tsc rewrites its build info whenever it compiles a change): then
 * it says so.
 */
export function measuredCommit (): string {
  const commit = execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim()
  const changed = execSync('git status --porcelain -- src schemas', { cwd: ROOT }).toString().trim() !== ''
  const newestSource = Math.max(...['src', 'schemas'].flatMap((folder) =>
    readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' }).map((file) => statSync(join(ROOT, folder, file)).mtimeMs)))
  if (newestSource > statSync(join(ROOT, 'dist', '.tsbuildinfo')).mtimeMs) return `${commit}, but a build older than the service's sources`
  return changed ? `${commit} with uncommitted changes to the service` : commit
}

/** PostgreSQL without the service's query timeouts, which seeding a million rows exceeds. */
export function postgresWithoutTimeouts (url: string) {
  const db = new Kysely<DatabaseSchema>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) })
  })
  return { db, dialect: 'postgres' as const, close: async () => await db.destroy() }
}
