import { type ChildProcess, execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import {
  CONNECTIONS, type Measured, ROOT, ROUNDS, SECONDS, START_FLAGS, WARM_UP_SECONDS, json, load, median, serviceEnv, start, stop
} from './harness.js'

/**
 * `npm run bench:ab -- <git ref>`: the authenticated user read (GET /api/v1/users/{id}) of
 * this checkout against the same read at another commit, to tell what a change costs. The
 * other commit is extracted into a temporary directory and built there with its own
 * `npm run build` (over this checkout's node_modules); each side runs compiled on its own
 * SQLite file. The sides alternate over BENCH_ROUNDS (default 5) rounds of BENCH_SECONDS
 * (default 4) seconds, each round in the other order from the last (the machine's speed
 * drifts), and their medians are compared. Prints the figures; writes nothing to the
 * repository.
 */
const ref = process.argv[2]
if (ref === undefined || ref.startsWith('-')) {
  process.stderr.write('usage: npm run bench:ab -- <git ref to compare this checkout with>\n')
  process.exit(2)
}

interface Side { name: string, base: string, pid: number | undefined, headers: Record<string, string>, path: string, rounds: Measured[] }

/** A user and a signed-in reader: the read is of the reader's own record. */
async function prepare (name: string, base: string, pid: number | undefined): Promise<Side> {
  const password = 'bench-password-1'
  const created = await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', name: 'Bench User', password }) })
  const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', password }) })
  return { name, base, pid, headers: { authorization: `Bearer ${String(login.data.access_token)}` }, path: `/api/v1/users/${String(created.data.id)}`, rounds: [] }
}

/** Extracts `commit` into `checkout` and builds it there, over this checkout's node_modules. */
function buildAt (commit: string, checkout: string): void {
  mkdirSync(checkout)
  execFileSync('tar', ['-x', '-C', checkout], { input: execFileSync('git', ['archive', commit], { cwd: ROOT, maxBuffer: 1 << 30 }) })
  symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'))
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: checkout, stdio: ['ignore', 'ignore', 'inherit'] })
}

async function main () {
  const commit = execFileSync('git', ['rev-parse', '--short', `${ref as string}^{commit}`], { cwd: ROOT }).toString().trim()
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim()
  const here = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT }).length > 0 ? `${head} and uncommitted changes` : head
  const dir = mkdtempSync(join(tmpdir(), 'users-api-ab-'))
  const children: ChildProcess[] = []
  /** Starts this checkout's service (or the one in `cwd`) and signs a reader in. */
  const side = async (name: string, cwd: string, file: string): Promise<Side> => {
    const server = await start([...START_FLAGS, 'dist/src/server.js'], serviceEnv(join(dir, `${file}.db`)), join(dir, `${file}.log`), cwd)
    children.push(server.child)
    return await prepare(name, server.base, server.child.pid)
  }
  try {
    buildAt(commit, join(dir, 'other'))
    const other = await side(commit, join(dir, 'other'), 'other')
    const self = await side(`this checkout (${here})`, ROOT, 'this')
    for (const { base, path, headers } of [other, self]) {
      await autocannon({ url: base + path, headers, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const current of round % 2 === 0 ? [other, self] : [self, other]) {
        const measured = await load({ url: current.base + current.path, headers: current.headers }, current.pid)
        current.rounds.push(measured)
        process.stdout.write(`round ${round + 1}, ${current.name}: ${measured.rps.toFixed(0)} req/s, ${measured.cpuUs.toFixed(1)} µs CPU per request\n`)
      }
    }
    const rps = (measured: Side) => median(measured.rounds.map((round) => round.rps))
    const cpu = (measured: Side) => median(measured.rounds.map((round) => round.cpuUs))
    process.stdout.write(`GET /api/v1/users/{id}, medians of ${ROUNDS} alternating rounds of ${SECONDS} s, ${CONNECTIONS} connections:\n` +
      `  ${self.name}: ${rps(self).toFixed(0)} req/s, ${cpu(self).toFixed(1)} µs CPU per request\n` +
      `  ${other.name}: ${rps(other).toFixed(0)} req/s, ${cpu(other).toFixed(1)} µs CPU per request\n` +
      `  throughput ratio ${(rps(self) / rps(other)).toFixed(3)}, CPU per request ratio ${(cpu(self) / cpu(other)).toFixed(3)}\n`)
  } finally {
    for (const child of children) await stop(child)
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
