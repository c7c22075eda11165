import { pbkdf2 } from 'node:crypto'
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import { compareAlgorithms, type Report } from './algorithms.js'
import { benchApiKeys } from './api-keys.js'
import { benchAuthorizationServer } from './authorization-server.js'
import { CONNECTIONS, json, load, loadAverage, machine, type Measured, measuredCommit, median, ROOT, ROUNDS, SECONDS, serviceEnv, START_FLAGS, start, stop, WARM_UP_SECONDS } from './harness.js'
import { benchSessions } from './sessions.js'
import { benchSizing } from './sizing.js'

/**
 * `npm run bench`: autocannon scenarios against the service (compiled, SQLite, every
 * protection on) and, interleaved in the same run, against a bare-Fastify ceiling. Prints
 * each target with its ratio and appends the table to bench/RESULTS.md.
 * BENCH_SECONDS (default 4) sets each measurement's length, BENCH_ROUNDS (default 5) how many
 * interleaved rounds each comparison with the ceiling takes (the cluster's takes 3),
 * BENCH_SOAK_SECONDS (default 60) the soak. BENCH_ONLY=authorization-server runs only the
 * authorization server's token endpoint (authorization-server.ts), BENCH_ONLY=sessions only the
 * refreshes and the read beside 100,000 revocations, on SQLite and on PostgreSQL + Redis
 * (sessions.ts), BENCH_ONLY=api-keys only the read by API key against the read by access token
 * (api-keys.ts), BENCH_ONLY=sizing only the capacity per core in Keycloak's terms on both
 * (sizing.ts), which the whole run ends with.
 *
 * The machine's speed drifts by tens of percent within a minute (shared host), so each
 * comparison alternates its sides over several short rounds and compares medians: a drift
 * then moves every side rather than one. A third side, reported beside each ratio, is the
 * ceiling plus what the specification makes any implementation pay per request (its
 * security headers and a request log line, see ceiling.ts): how far below the ceiling a
 * conforming service starts.
 */
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 60)
/** Rounds of the cluster comparison: each starts a cluster twice, so fewer than the others. */
const CLUSTER_ROUNDS = 3

function rssMb (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
}

/** Hashes per second with every threadpool thread busy: the floor sign-in can reach. */
async function pbkdf2Capacity (): Promise<number> {
  const derive = promisify(pbkdf2)
  const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4)
  let done = 0
  const until = Date.now() + SECONDS * 1000
  await Promise.all(Array.from({ length: threads }, async () => {
    while (Date.now() < until) {
      await derive('benchmark-password', 'salt-salt-salt-1', 120_000, 32, 'sha256')
      done++
    }
  }))
  return done / SECONDS
}

/** One side's rounds as reported: the median throughput and CPU per request, and the last round's latencies. */
function summary (rounds: Measured[]): Measured {
  const { p50, p99 } = rounds.at(-1) ?? { p50: 0, p99: 0 }
  return { rps: median(rounds.map((round) => round.rps)), p50, p99, cpuUs: median(rounds.map((round) => round.cpuUs)) }
}

/** One server a comparison measures: where to send the request, and the process to charge its CPU to. */
interface Side { base: string, path: string, headers?: Record<string, string>, pid: number | undefined }

/** Scenario groups that run alone with BENCH_ONLY: each, and the databases it runs on. */
/** A group's rows go to the report; it may answer lines to append after them (the sizing table). */
type Group = (dir: string, report: Report) => Promise<string[] | undefined>
const ALONE: Record<string, { bench: Group, databases: string }> = {
  'authorization-server': { bench: async (dir, report) => { await benchAuthorizationServer(dir, report); return undefined }, databases: 'SQLite' },
  sessions: { bench: async (dir, report) => { await benchSessions(dir, report); return undefined }, databases: 'SQLite, and PostgreSQL + Redis' },
  'api-keys': { bench: async (dir, report) => { await benchApiKeys(dir, report); return undefined }, databases: 'SQLite' },
  sizing: { bench: benchSizing, databases: 'SQLite, and PostgreSQL + Redis' }
}
const ONLY = process.env.BENCH_ONLY
/** The load average when the run started: the heading gives it beside the one at the end. */
const LOAD_AT_START = loadAverage()

/**
 * A row of the table as printed and appended; rows whose target is only "reported" carry no
 * verdict and are not counted.
 */
function reporter (results: string[], verdicts: boolean[]): Report {
  return (name, ratio, target, holds, detail) => {
    const reported = target.startsWith('reported')
    if (!reported) verdicts.push(holds)
    const verdict = reported ? (holds ? '—' : 'FAILED') : holds ? 'holds' : 'MISSED'
    const line = `| ${name} | ${ratio.toFixed(2)} | ${target} | ${verdict} | ${detail} |`
    results.push(line)
    process.stdout.write(`${line}\n`)
  }
}

const COMMIT = measuredCommit()

/**
 * Appends a run's table (and `after` it, when given, the sizing table) to bench/RESULTS.md under
 * a heading of the date, the commit, `what` was measured on which `databases`, the machine and
 * its load.
 */
function appendResults (what: string, databases: string, results: string[], after: string[] = []): void {
  appendFileSync(join(ROOT, 'bench', 'RESULTS.md'), [
    '',
    `## ${new Date().toISOString().slice(0, 10)} — commit ${COMMIT} — ${what}, ${CONNECTIONS} connections, ${databases}, ${machine()}, ` +
      `load average ${LOAD_AT_START} at the start and ${loadAverage()} at the end`,
    '',
    '| scenario | ratio | target | verdict | measured |',
    '|---|---|---|---|---|',
    ...results,
    ...after,
    ''
  ].join('\n'))
}

/** BENCH_ONLY=<name>: that scenario group alone. */
async function alone (name: string): Promise<void> {
  const group = ALONE[name]
  if (group === undefined) throw new Error(`BENCH_ONLY=${name}: it is one of ${Object.keys(ALONE).join(', ')}`)
  const dir = mkdtempSync(join(tmpdir(), 'users-api-bench-'))
  const results: string[] = []
  const verdicts: boolean[] = []
  let after: string[] | undefined
  try {
    after = await group.bench(dir, reporter(results, verdicts))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  appendResults(`${name} alone: medians of ${ROUNDS} rounds of ${SECONDS} s`, group.databases, results, after)
  process.stdout.write(`${verdicts.filter(Boolean).length} of ${verdicts.length} targets hold\n`)
}

async function main () {
  if (ONLY !== undefined) {
    await alone(ONLY)
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'users-api-bench-'))
  const env = serviceEnv(join(dir, 'bench.db'))
  const service = await start([...START_FLAGS, 'dist/src/server.js'], env, join(dir, 'service.log'))
  // The same service on the same database with its request log off (a line per request is at
  // info), as the peers, which log nothing.
  const unlogged = await start([...START_FLAGS, 'dist/src/server.js'], { ...env, LOG_LEVEL: 'warn' }, join(dir, 'unlogged.log'))
  const ceiling = await start(['dist/bench/ceiling.js'], {}, join(dir, 'ceiling.log'))
  const obligations = await start(['dist/bench/ceiling.js'], { SPEC_OBLIGATIONS: '1', LOG_LEVEL: env.LOG_LEVEL ?? 'info' }, join(dir, 'obligations.log'))
  const express = await start([join(ROOT, 'bench', 'peers', 'express', 'server.js')], { DATABASE_PATH: join(dir, 'express.db') }, join(dir, 'express.log'))
  const betterAuth = await start([join(ROOT, 'bench', 'peers', 'better-auth', 'server.js')], { DATABASE_PATH: join(dir, 'better-auth.db'), ADMIN_EMAIL: 'bench@example.com' }, join(dir, 'better-auth.log'))
  const results: string[] = []
  const verdicts: boolean[] = []
  const report = reporter(results, verdicts)
  let sizing: string[] = []
  try {
    const password = 'bench-password-1'
    const created = await json(`${service.base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', name: 'Bench User', password }) })
    // Sign-in load uses its own account: beyond SESSION_MAX_CONCURRENT its oldest sessions end,
    // with their access tokens, which must not be the readers'.
    const signInBody = JSON.stringify({ email: 'member-0@example.com', password })
    // Each peer holds the same 51 accounts, created through its own API. Node's fetch marks
    // its requests as a browser's (Sec-Fetch-Mode), so Better Auth wants their origin.
    const betterAuthPost = (path: string, body: string) => json(betterAuth.base + path, { method: 'POST', body, headers: { origin: betterAuth.base } })
    await json(`${express.base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', name: 'Bench User', password }) })
    await betterAuthPost('/api/auth/sign-up/email', JSON.stringify({ email: 'bench@example.com', name: 'Bench User', password }))
    for (let n = 0; n < 50; n++) {
      const member = JSON.stringify({ email: `member-${n}@example.com`, name: `Member ${n}`, password })
      await Promise.all([
        json(`${service.base}/api/v1/users`, { method: 'POST', body: member }),
        json(`${express.base}/api/v1/users`, { method: 'POST', body: member }),
        betterAuthPost('/api/auth/sign-up/email', member)
      ])
    }
    const credentials = JSON.stringify({ email: 'bench@example.com', password })
    const login = await json(`${service.base}/api/v1/auth/login`, { method: 'POST', body: credentials })
    const headers = { authorization: `Bearer ${String(login.data.access_token)}` }
    const id = String(created.data.id)
    const expressLogin = await json(`${express.base}/api/v1/auth/login`, { method: 'POST', body: credentials })
    const expressHeaders = { authorization: `Bearer ${String(expressLogin.data.access_token)}` }
    const expressId = String((await json(`${express.base}/api/v1/users?limit=1`, { headers: expressHeaders })).data[0].id)
    const betterAuthLogin = await betterAuthPost('/api/auth/sign-in/email', credentials)
    const betterAuthHeaders = { authorization: `Bearer ${String(betterAuthLogin.token)}` }

    /**
     * One scenario on every side, in the same interleaved rounds: the service with its request
     * log on against bare Fastify and the spec floor (which logs what the service logs, at the
     * same level), the service with its request log off against the peers (which log nothing).
     */
    const compare = async (
      name: string,
      sides: { ours: Side, unlogged: Side, bare: Side, floor: Side, express: Side, betterAuth: Side },
      targets: { bare: number, floor?: number, express?: number, betterAuth?: number }
    ) => {
      const order = [sides.bare, sides.ours, sides.floor, sides.unlogged, sides.express, sides.betterAuth]
      // Warm every side up first: the JIT settles the simpler servers sooner.
      for (const side of order) {
        await autocannon({
          url: side.base + side.path, headers: side.headers, connections: CONNECTIONS, duration: WARM_UP_SECONDS
        })
      }
      const rounds = new Map<Side, Measured[]>(order.map((side) => [side, []]))
      for (let round = 0; round < ROUNDS; round++) {
        // Each round in the other order from the last: the machine's speed drifts.
        for (const side of round % 2 === 0 ? order : [...order].reverse()) {
          rounds.get(side)?.push(await load({ url: side.base + side.path, headers: side.headers }, side.pid))
        }
      }
      const [bare, ours, floor, quiet, expressPeer, betterAuthPeer] = order
        .map((side) => summary(rounds.get(side) ?? []))
      if (bare === undefined || ours === undefined || floor === undefined || quiet === undefined ||
        expressPeer === undefined || betterAuthPeer === undefined) return
      const row = (against: string, mine: Measured, theirs: Measured, target: number | undefined, unit: string) => {
        const ratio = mine.rps / theirs.rps
        report(`${name} vs ${against}`, ratio, target === undefined ? 'reported' : `≥ ${target} × ${unit}`, target === undefined || ratio >= target,
          `${mine.rps.toFixed(0)} vs ${theirs.rps.toFixed(0)} req/s; p99 ${mine.p99} vs ${theirs.p99} ms; server CPU per request ${mine.cpuUs.toFixed(1)} vs ${theirs.cpuUs.toFixed(1)} µs`)
      }
      const ratio = ours.rps / bare.rps
      report(name, ratio, `≥ ${targets.bare} × ceiling`, ratio >= targets.bare,
        `${ours.rps.toFixed(0)} vs ${bare.rps.toFixed(0)} req/s; p50 ${ours.p50} ms, p99 ${ours.p99} ms; RSS ${rssMb(service.child.pid ?? 0).toFixed(0)} MB; ` +
        `ceiling with the spec's headers and request log: ${(floor.rps / bare.rps).toFixed(2)}; ` +
        `server CPU per request ${ours.cpuUs.toFixed(1)} µs vs ${bare.cpuUs.toFixed(1)} µs (with the spec's headers and log ${floor.cpuUs.toFixed(1)} µs)`)
      row(`the spec floor (both logging at ${env.LOG_LEVEL ?? 'info'})`, ours, floor, targets.floor, 'spec floor')
      row('the Express peer (request log off)', quiet, expressPeer, targets.express, 'Express')
      row(`Better Auth's ${sides.betterAuth.path.split('?')[0]} (request log off)`, quiet, betterAuthPeer, targets.betterAuth, 'Better Auth')
    }
    const scenario = (path: string, ceilingPath: string, expressPath: string, betterAuthPath: string) => ({
      ours: { base: service.base, path, headers, pid: service.child.pid },
      unlogged: { base: unlogged.base, path, headers, pid: unlogged.child.pid },
      // The same request headers everywhere: the floor logs them, as the service does.
      bare: { base: ceiling.base, path: ceilingPath, headers, pid: ceiling.child.pid },
      floor: { base: obligations.base, path: ceilingPath, headers, pid: obligations.child.pid },
      express: { base: express.base, path: expressPath, headers: expressHeaders, pid: express.child.pid },
      betterAuth: { base: betterAuth.base, path: betterAuthPath, headers: betterAuthHeaders, pid: betterAuth.child.pid }
    })
    await compare('GET /health', scenario('/health', '/health', '/health', '/api/auth/ok'), { bare: 0.85 })
    await compare('GET /api/v1/users/{id} (authenticated)', scenario(`/api/v1/users/${id}`, `/api/v1/users/${id}`, `/api/v1/users/${expressId}`, '/api/auth/get-session'),
      { bare: 0.5, floor: 0.8, express: 5, betterAuth: 20 })
    await compare('GET /api/v1/users?limit=20 (authenticated)', scenario('/api/v1/users?limit=20', '/api/v1/users', '/api/v1/users?limit=20', '/api/auth/admin/list-users?limit=20'),
      { bare: 0.4, floor: 0.6, express: 3 })
    await stop(unlogged.child)
    await stop(express.child)
    await stop(betterAuth.child)

    const capacities: number[] = []
    const signInRounds: Measured[] = []
    for (let round = 0; round < ROUNDS; round++) {
      capacities.push(await pbkdf2Capacity())
      signInRounds.push(await load({ url: `${service.base}/api/v1/auth/login`, method: 'POST', connections: 8, headers: { 'content-type': 'application/json' }, body: signInBody }))
    }
    const capacity = median(capacities)
    const signIns = summary(signInRounds)
    report('POST /api/v1/auth/login', signIns.rps / capacity, '≥ 0.9 × raw PBKDF2 capacity', signIns.rps / capacity >= 0.9,
      `${signIns.rps.toFixed(1)} sign-ins/s vs ${capacity.toFixed(1)} hashes/s; p99 ${signIns.p99} ms`)

    let registrations = 0
    const register = await autocannon({
      url: `${service.base}/api/v1/users`,
      method: 'POST',
      connections: 8,
      duration: SECONDS,
      headers: { 'content-type': 'application/json' },
      requests: [{ setupRequest: (request) => ({ ...request, body: JSON.stringify({ email: `load-${process.pid}-${registrations++}@example.com`, name: 'Load', password }) }) }]
    })
    report('POST /api/v1/users', register.requests.average / capacity, 'reported (hash-bound)', register.non2xx === 0,
      `${register.requests.average.toFixed(1)} registrations/s; p99 ${register.latency.p99} ms; non-2xx ${register.non2xx}`)

    const quiet = await load({ url: `${service.base}/api/v1/users/${id}`, headers, connections: 8 })
    const storm = autocannon({ url: `${service.base}/api/v1/auth/login`, method: 'POST', connections: 16, duration: SECONDS + 2, headers: { 'content-type': 'application/json' }, body: signInBody })
    const busy = await load({ url: `${service.base}/api/v1/users/${id}`, headers, connections: 8 })
    await storm
    // autocannon gives latencies in whole milliseconds: a quiet p99 of 0 is under 1 ms, and counts as 1.
    const quietP99 = Math.max(quiet.p99, 1)
    report('mixed: reads during a sign-in storm', busy.p99 / quietP99, '≤ 3 × quiet p99', busy.p99 <= 3 * quietP99,
      `p99 ${busy.p99} ms vs ${quiet.p99 < 1 ? 'under 1' : quiet.p99} ms quiet; ${busy.rps.toFixed(0)} vs ${quiet.rps.toFixed(0)} req/s`)

    const samples: number[] = []
    const sampler = setInterval(() => samples.push(rssMb(service.child.pid ?? 0)), 1000)
    await autocannon({ url: `${service.base}/api/v1/users/${id}`, headers, connections: CONNECTIONS, duration: SOAK_SECONDS })
    clearInterval(sampler)
    const settled = samples.slice(Math.floor(samples.length / 4))
    const low = Math.min(...settled)
    const high = Math.max(...settled)
    report(`RSS over a ${SOAK_SECONDS} s soak`, high / low, '≤ 1.10 and < 200 MB', high / low <= 1.1 && high < 200,
      `${low.toFixed(0)}–${high.toFixed(0)} MB after warm-up (first quarter excluded)`)

    await compareAlgorithms(dir, report)
    await benchApiKeys(dir, report)
    await benchSessions(dir, report)

    // Scaling on one host: the same read through Node's cluster, one worker and then two, on
    // the same database (reported: on a 2-core machine the load generator takes a core), in
    // alternating rounds like the comparisons above, medians compared.
    await stop(service.child)
    const oneWorker: number[] = []
    const twoWorkers: number[] = []
    for (let round = 0; round < CLUSTER_ROUNDS; round++) {
      for (const workers of [1, 2]) {
        const logFile = join(dir, `cluster-${workers}-${round}.log`)
        const cluster = await start([...START_FLAGS, 'dist/src/cluster.js'], { ...env, WORKERS: String(workers) }, logFile)
        try {
          while ((readFileSync(logFile, 'utf8').match(/"worker listening"/g) ?? []).length < workers) {
            if (cluster.child.exitCode !== null) throw new Error(`the cluster of ${workers} exited with ${cluster.child.exitCode}`)
            await new Promise((resolve) => setTimeout(resolve, 100))
          }
          await autocannon({ url: `${cluster.base}/api/v1/users/${id}`, headers, connections: CONNECTIONS, duration: WARM_UP_SECONDS })
          const { rps } = await load({ url: `${cluster.base}/api/v1/users/${id}`, headers })
          if (workers === 1) oneWorker.push(rps)
          else twoWorkers.push(rps)
        } finally {
          await stop(cluster.child)
        }
      }
    }
    const one = median(oneWorker)
    const two = median(twoWorkers)
    report('cluster: two workers vs one (authenticated GET user)', two / one, 'reported', true,
      `${two.toFixed(0)} vs ${one.toFixed(0)} req/s, medians of ${CLUSTER_ROUNDS} rounds`)
    sizing = await benchSizing(dir, report)
  } finally {
    for (const child of [service.child, unlogged.child, express.child, betterAuth.child]) await stop(child)
    await stop(ceiling.child)
    await stop(obligations.child)
    rmSync(dir, { recursive: true, force: true })
  }

  appendResults(`medians of ${ROUNDS} interleaved rounds of ${SECONDS} s`, 'SQLite (sessions and sizing also on PostgreSQL + Redis)', results, sizing)
  process.stdout.write(`${verdicts.filter(Boolean).length} of ${verdicts.length} targets hold\n`)
}

await main()
