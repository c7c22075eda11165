import { execFileSync, execSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { CONNECTIONS, json, load, loadAverage, machine, type Measured, median, ROOT, SECONDS, serviceEnv, START_FLAGS, start, stop } from './harness.js'

/**
 * `npm run bench:ab -- <git ref> [<git ref>]`: the service as it was at the first ref (A)
 * against the second, or this checkout when there is none (B), both compiled and run as
 * `npm run bench` runs the service (SQLite, every protection on,
 * limits out of reach), each on its own database. Each scenario alternates A and B over
 * BENCH_ROUNDS (default 5) rounds of BENCH_SECONDS (default 4) seconds, the side that goes
 * first alternating too, and compares medians: on a shared machine whose speed drifts, a
 * drift then moves both sides. Prints a table; appends nothing.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const WARM_UP_SECONDS = 3
const ORIGIN = 'http://localhost'

interface Side { name: string, base: string, pid: number | undefined, headers: Record<string, string>, id: string }

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
  const env = (name: string) => ({ ...serviceEnv(join(dir, `${name}.db`)), CORS_ORIGINS: ORIGIN })
  const children: Array<Awaited<ReturnType<typeof start>>['child']> = []
  try {
    const treeA = buildCommit(refA, dir, 'A')
    const treeB = refB === undefined
      ? { commit: `${execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim()} (checkout)`, root: ROOT }
      : buildCommit(refB, dir, 'B')
    const sides: Side[] = []
    for (const [name, cwd] of [['A', treeA.root], ['B', treeB.root]] as const) {
      const server = await start([...START_FLAGS, 'dist/src/server.js'], env(name), join(dir, `${name}.log`), cwd)
      children.push(server.child)
      sides.push({ name, base: server.base, pid: server.child.pid, ...await prepare(server.base) })
    }
    const [a, b] = sides as [Side, Side]

    process.stdout.write(`A = ${treeA.commit}, B = ${treeB.commit}: medians of ${ROUNDS} alternating rounds of ${SECONDS} s, ` +
      `${CONNECTIONS} connections, ${machine()}, load average ${loadAverage()} at the start\n\n`)
    process.stdout.write('| scenario | A req/s | B req/s | B/A | B/A per round | A µs CPU/req | B µs CPU/req |\n|---|---|---|---|---|---|---|\n')
    const scenarios: Array<{
      name: string, path: (side: Side) => string, headers: (side: Side) => Record<string, string>
    }> = [
      { name: 'GET /health', path: () => '/health', headers: () => ({}) },
      { name: 'GET /api/v1/users/{id} (authenticated)', path: (side) => `/api/v1/users/${side.id}`, headers: (side) => side.headers },
      { name: 'GET /api/v1/users/{id} (authenticated, allowed Origin)', path: (side) => `/api/v1/users/${side.id}`, headers: (side) => ({ ...side.headers, origin: ORIGIN }) }
    ]
    for (const scenario of scenarios) {
      const options = (side: Side) => ({ url: side.base + scenario.path(side), headers: scenario.headers(side) })
      for (const side of sides) {
        await autocannon({ ...options(side), connections: CONNECTIONS, duration: WARM_UP_SECONDS })
      }
      const rounds = new Map<Side, Measured[]>([[a, []], [b, []]])
      for (let round = 0; round < ROUNDS; round++) {
        for (const side of round % 2 === 0 ? [a, b] : [b, a]) {
          rounds.get(side)?.push(await load(options(side), side.pid))
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
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
