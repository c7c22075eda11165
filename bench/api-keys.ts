import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import autocannon from 'autocannon'
import type { Report } from './algorithms.js'
import {
  CONNECTIONS, json, load, loadAverage, type Measured, medians, ROOT, ROUNDS, serviceEnv, START_FLAGS, start, stop,
  WARM_UP_SECONDS
} from './harness.js'

/**
 * API keys against access tokens (docs/performance.md, "API keys"): the authenticated read of
 * run.ts (`GET /api/v1/users/{id}`) sent with a person's API key and with an access token of the
 * same person, to one service (SQLite), in interleaved rounds, medians compared. The key's
 * lookup is cached per instance and checked against the revocation list, as a token's `jti` is.
 */

/** A key's read against a token's (issue: within 10 %). */
const KEY_READ_TARGET = 0.9
const PASSWORD = 'bench-password-1'

export async function benchApiKeys (dir: string, report: Report): Promise<void> {
  const env = serviceEnv(join(dir, 'api-keys.db'))
  // An account whose address counts as verified, as a key's creator's must be.
  const printed = execFileSync(process.execPath, ['dist/src/cli/user-create.js', '--email', 'keyed@example.com', '--password', PASSWORD], {
    cwd: ROOT, env: { ...process.env, ...env, LOG_LEVEL: 'error' }, encoding: 'utf8'
  })
  const id = /\(([0-9a-f-]{36})\)/.exec(printed)?.[1] ?? ''
  const service = await start([...START_FLAGS, 'dist/src/server.js'], env, join(dir, 'api-keys.log'))
  try {
    const base = service.base
    const login = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email: 'keyed@example.com', password: PASSWORD }) })
    const token = String(login.data.access_token)
    const url = `${base}/api/v1/users/${id}`
    const made = await json(`${base}/api/v1/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: 'Bench', scopes: ['read'], current_password: PASSWORD })
    })
    const sides = [
      { name: 'access token', headers: { authorization: `Bearer ${token}` }, reads: [] as Measured[] },
      { name: 'API key', headers: { authorization: `Bearer ${String(made.data.key)}` }, reads: [] as Measured[] }
    ]
    for (const side of sides) {
      await autocannon({ url, headers: side.headers, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
    }
    const loads: string[] = []
    for (let round = 0; round < ROUNDS; round++) {
      loads.push(loadAverage())
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        side.reads.push(await load({ url, headers: side.headers }, service.child.pid))
      }
    }
    const [byToken, byKey] = sides.map((side) => medians(side.reads)) as [Measured, Measured]
    const ratio = byKey.rps / byToken.rps
    report('GET /api/v1/users/{id} (authenticated), API key vs access token, SQLite', ratio, `≥ ${KEY_READ_TARGET} × access token`, ratio >= KEY_READ_TARGET,
      `${byKey.rps.toFixed(0)} vs ${byToken.rps.toFixed(0)} req/s; p99 ${byKey.p99} vs ${byToken.p99} ms; ` +
      `server CPU per request ${byKey.cpuUs.toFixed(1)} vs ${byToken.cpuUs.toFixed(1)} µs (× ${(byKey.cpuUs / byToken.cpuUs).toFixed(2)}); ` +
      `load average ${loads.join(', ')} at the rounds' starts`)
  } finally {
    await stop(service.child)
  }
}
