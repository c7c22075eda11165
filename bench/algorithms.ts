import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { type AsymmetricAlgorithm, generateKeyPair, type JwtAlgorithm } from '../src/security/signing-keys.js'
import { type Measured, ROUNDS, START_FLAGS, WARM_UP_SECONDS, json, load, median, serviceEnv, start, stop } from './harness.js'

/** Rows this comparison reports: scenario name, ratio to HS256, target, whether it holds, details. */
export type Report = (name: string, ratio: number, target: string, holds: boolean, detail: string) => void

const COMPARED: AsymmetricAlgorithm[] = ['EdDSA', 'ES256']

interface Side {
  algorithm: JwtAlgorithm
  base: string
  child: ChildProcess
  read: { path: string, headers: Record<string, string> }
  signInBody: string
  reads: Measured[]
  signIns: Measured[]
}

/**
 * The authenticated user read and sign-in under EdDSA and ES256, each beside HS256: one service
 * per algorithm (compiled, SQLite file of its own), alternating over ROUNDS rounds, medians
 * compared. A read verifies its token once (then the verified-token cache answers), so the
 * read shows the cache holds under every algorithm; a sign-in signs two tokens beside its
 * password hash.
 */
export async function compareAlgorithms (dir: string, report: Report): Promise<void> {
  const sides: Side[] = []
  const children: ChildProcess[] = []
  try {
    for (const algorithm of ['HS256', ...COMPARED] as JwtAlgorithm[]) {
      const key: Record<string, string> = algorithm === 'HS256' ? {} : { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: generateKeyPair(algorithm).privateKey, JWT_ISSUER: 'https://users.example.com' }
      const server = await start([...START_FLAGS, 'dist/src/server.js'], { ...serviceEnv(join(dir, `${algorithm}.db`)), ...key }, join(dir, `${algorithm}.log`))
      children.push(server.child)
      const password = 'bench-password-1'
      const created = await json(`${server.base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'reader@example.com', name: 'Reader', password }) })
      await json(`${server.base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'signer@example.com', name: 'Signer', password }) })
      const login = await json(`${server.base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: 'reader@example.com', password }) })
      sides.push({
        algorithm,
        base: server.base,
        child: server.child,
        read: { path: `/api/v1/users/${String(created.data.id)}`, headers: { authorization: `Bearer ${String(login.data.access_token)}` } },
        signInBody: JSON.stringify({ email: 'signer@example.com', password }),
        reads: [],
        signIns: []
      })
    }
    for (const side of sides) {
      await autocannon({ url: side.base + side.read.path, headers: side.read.headers, duration: WARM_UP_SECONDS })
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in the other order from the last: the machine's speed drifts.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        side.reads.push(await load({ url: side.base + side.read.path, headers: side.read.headers }, side.child.pid))
        side.signIns.push(await load({ url: `${side.base}/api/v1/auth/login`, method: 'POST', connections: 8, headers: { 'content-type': 'application/json' }, body: side.signInBody }, side.child.pid))
      }
    }
    const [hs256, ...others] = sides
    if (hs256 === undefined) return
    const rps = (rounds: Measured[]) => median(rounds.map((round) => round.rps))
    const cpu = (rounds: Measured[]) => median(rounds.map((round) => round.cpuUs))
    for (const side of others) {
      const readRatio = rps(side.reads) / rps(hs256.reads)
      // The targets (docs/performance.md, "Targets"): EdDSA reads within 10% of HS256; ES256 reported.
      const readTarget = side.algorithm === 'EdDSA' ? 0.9 : undefined
      report(`GET /api/v1/users/{id} (authenticated), ${side.algorithm} vs HS256`, readRatio,
        readTarget === undefined ? 'reported' : `≥ ${readTarget} × HS256`, readTarget === undefined || readRatio >= readTarget,
        `${rps(side.reads).toFixed(0)} vs ${rps(hs256.reads).toFixed(0)} req/s; server CPU per request ${cpu(side.reads).toFixed(1)} µs vs ${cpu(hs256.reads).toFixed(1)} µs`)
      report(`POST /api/v1/auth/login, ${side.algorithm} vs HS256`, rps(side.signIns) / rps(hs256.signIns), 'reported', true,
        `${rps(side.signIns).toFixed(1)} vs ${rps(hs256.signIns).toFixed(1)} sign-ins/s; server CPU per sign-in ${(cpu(side.signIns) / 1000).toFixed(2)} ms vs ${(cpu(hs256.signIns) / 1000).toFixed(2)} ms`)
    }
  } finally {
    for (const child of children) await stop(child)
  }
}
