import { execFileSync, execSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import {
  CONNECTIONS, dropPostgresSchema, freshPostgresSchema, json, load, loadAverage, machine, type Measured, median,
  REDIS_URL, ROOT, SECONDS, serviceEnv, START_FLAGS, start, stop
} from './harness.js'
import { resume, rotating, type Session, signedInSessions } from './sessions.js'

/**
 * `npm run bench:ab -- <git ref> [<git ref>]`: the service as it was at the first ref (A)
 * against the second, or this checkout when there is none (B), both compiled and run as
 * `npm run bench` runs the service (SQLite, every protection on,
 * limits out of reach), each on its own database. Each scenario alternates A and B over
 * BENCH_ROUNDS (default 5) rounds of BENCH_SECONDS (default 4) seconds, the side that goes
 * first alternating too, and compares medians: on a shared machine whose speed drifts, a
 * drift then moves both sides. Prints a table; appends nothing.
 * BENCH_AB_BACKEND=postgres runs both on PostgreSQL + Redis instead (BENCH_POSTGRES_URL, a
 * schema each; BENCH_REDIS_URL), as sessions.ts does.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const WARM_UP_SECONDS = 3
const ORIGIN = 'http://localhost'
const POSTGRES = process.env.BENCH_AB_BACKEND === 'postgres'
const schemaOf = (side: string) => `bench_ab_${side.toLowerCase()}`

interface Side {
  name: string
  base: string
  pid: number | undefined
  headers: Record<string, string>
  id: string
  /** One session per connection, for the refresh scenario. */
  sessions: Session[]
}

/** <ref>'s tree, compiled against this checkout's node_modules. */
function buildCommit (ref: string, dir: string, side: string): { commit: string, root: string } {
  const commit = execFileSync('git', ['rev-parse', '--verify', '--short', `${ref}^{commit}`], { cwd: ROOT }).toString().trim()
  const root = join(dir, `tree-${side}`)
  mkdirSync(root)
  execSync(`git archive ${commit} | tar -x -C ${root}`, { cwd: ROOT })
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'))
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' })
  return { commit, root }
}

/** An account to read and a token to read it with. */
async function prepare (base: string): Promise<{ headers: Record<string, string>, id: string }> {
  const password = 'bench-password-1'
  const created = await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', name: 'Bench User', password }) })
  const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', password }) })
  return { headers: { authorization: `Bearer ${String(login.data.access_token)}` }, id: String(created.data.id) }
}

async function main () {
  const [refA, refB] = process.argv.slice(2)
  if (refA === undefined) throw new Error('usage: npm run bench:ab -- <git ref of A> [<git ref of B>]')
  const dir = mkdtempSync(join(tmpdir(), 'users-api-ab-'))
  const env = async (name: string) => ({
    ...serviceEnv(join(dir, `${name}.db`)),
    CORS_ORIGINS: ORIGIN,
    ...POSTGRES ? { DATABASE_URL: await freshPostgresSchema(schemaOf(name)), REDIS_URL } : {}
  })
  const children: Array<Awaited<ReturnType<typeof start>>['child']> = []
  try {
    const treeA = buildCommit(refA, dir, 'A')
    const treeB = refB === undefined
      ? { commit: `${execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim()} (checkout)`, root: ROOT }
      : buildCommit(refB, dir, 'B')
    const sides: Side[] = []
    for (const [name, cwd] of [['A', treeA.root], ['B', treeB.root]] as const) {
      const server = await start([...START_FLAGS, 'dist/src/server.js'], await env(name), join(dir, `${name}.log`), cwd)
      children.push(server.child)
      const sessions = await signedInSessions(server.base, CONNECTIONS)
      sides.push({ name, base: server.base, pid: server.child.pid, ...await prepare(server.base), sessions })
    }
    const [a, b] = sides as [Side, Side]

    process.stdout.write(`A = ${treeA.commit}, B = ${treeB.commit}: medians of ${ROUNDS} alternating rounds of ${SECONDS} s, ` +
      `${CONNECTIONS} connections, ${POSTGRES ? 'PostgreSQL + Redis' : 'SQLite'}, ${machine()}, load average ${loadAverage()} at the start\n\n`)
    process.stdout.write('| scenario | A req/s | B req/s | B/A | B/A per round | A µs CPU/req | B µs CPU/req |\n|---|---|---|---|---|---|---|\n')
    const read = (path: (side: Side) => string, headers: (side: Side) => Record<string, string>) =>
      (side: Side) => ({ url: side.base + path(side), headers: headers(side) })
    // A refresh rotates each connection's own session (sessions.ts); a round's unanswered
    // refreshes are sent again after it, so the next round starts from live tokens.
    const scenarios: Array<{
      name: string, options: (side: Side) => autocannon.Options, after?: (side: Side) => Promise<void>
    }> = [
      { name: 'GET /health', options: read(() => '/health', () => ({})) },
      { name: 'GET /api/v1/users/{id} (authenticated)', options: read((side) => `/api/v1/users/${side.id}`, (side) => side.headers) },
      {
        name: 'GET /api/v1/users/{id} (authenticated, allowed Origin)',
        options: read((side) => `/api/v1/users/${side.id}`, (side) => ({ ...side.headers, origin: ORIGIN }))
      },
      {
        name: 'POST /api/v1/auth/refresh (each connection rotating its own session)',
        options: (side) => rotating(side.base, side.sessions),
        after: async (side) => { await resume(side.base, side.sessions) }
      }
    ]
    for (const scenario of scenarios) {
      const { options, after = async () => {} } = scenario
      for (const side of sides) {
        await autocannon({ ...options(side), connections: CONNECTIONS, duration: WARM_UP_SECONDS })
        await after(side)
      }
      const rounds = new Map<Side, Measured[]>([[a, []], [b, []]])
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of round % 2 === 0 ? [a, b] : [b, a]) {
          rounds.get(side)?.push(await load(options(side), side.pid))
          await after(side)
        }
      }
      const [ra, rb] = [rounds.get(a) ?? [], rounds.get(b) ?? []]
      const rps = (side: Measured[]) => median(side.map((m) => m.rps))
      const cpu = (side: Measured[]) => median(side.map((m) => m.cpuUs))
      const perRound = rb.map((m, index) => (m.rps / (ra[index]?.rps ?? Number.NaN)).toFixed(2)).join(', ')
      process.stdout.write(`| ${scenario.name} | ${rps(ra).toFixed(0)} | ${rps(rb).toFixed(0)} | ${(rps(rb) / rps(ra)).toFixed(3)} | ${perRound} | ${cpu(ra).toFixed(1)} | ${cpu(rb).toFixed(1)} |\n`)
    }
  } finally {
    for (const child of children) await stop(child)
    if (POSTGRES) for (const side of ['A', 'B']) await dropPostgresSchema(schemaOf(side))
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
