import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { COUNT_LIMITS } from '../src/collection/query.js'
import { loadConfig } from '../src/config/index.js'
import { bulkSeed, bulkSeedOrganizations } from '../src/store/bulk-seed.js'
import { openDatabase } from '../src/store/database.js'
import { migrateToLatest } from '../src/store/migrations/index.js'
import type { Db } from '../src/store/types.js'
import {
  dropPostgresSchema, freshPostgresSchema, json, JWT_SECRET, loadAverage, machine, median, postgresWithoutTimeouts,
  ROOT, START_FLAGS, serviceEnv, start, stop
} from './harness.js'

/**
 * `npm run bench:scale`: the collections at 10k and 1M rows (docs/performance.md, "Scale").
 * For each database and size, users, posts and audit entries are generated in bulk, the
 * service is started on them, and each request is sent REQUESTS times one after another while
 * /health is asked every few milliseconds: per request the median and longest answer, how the
 * median grew from the smallest size to the largest, and the longest /health answer meanwhile.
 * The seeded audit entries are dated 2025: the service is first started with a retention that
 * keeps them, so every size is measured in the same steady state; then, at the largest size,
 * started again with the default retention, which leaves every entry past it: how long it
 * took to answer /health, and the same requests again while the purge of them all runs.
 * Whether the targets hold.
 * At each size one organization holds as many members as there are users, at most 100,000
 * (as many organizations, each other one with one owner), and one account belongs to 1,000 of
 * them: its members and that account's organizations are read like the other collections.
 * On PostgreSQL every size is measured twice: on the tables as loaded and analysed (autovacuum
 * held off on them meanwhile), then after VACUUM (ANALYZE), which sets their visibility maps.
 * BENCH_SCALE_SIZES (default 10000,1000000), BENCH_SCALE_DATABASES (sqlite,postgres),
 * BENCH_POSTGRES_URL (harness.ts; a schema per size).
 */
const SIZES = (process.env.BENCH_SCALE_SIZES ?? '10000,1000000').split(',').map(Number)
const DATABASES = (process.env.BENCH_SCALE_DATABASES ?? 'sqlite,postgres').split(',')
const REQUESTS = Number(process.env.BENCH_SCALE_REQUESTS ?? 30)
const HEALTH_EVERY_MS = 5
/** The members of the largest organization, and the organizations seeded, at a size. */
const membersAt = (size: number) => Math.min(size, 100_000)
/** How many organizations the member account belongs to. */
const MEMBERSHIPS = 1000
/** The largest organization (bulkSeedOrganizations): every member, its owner first. */
const ORGANIZATION = '00000003-0000-7000-8000-000000000000'

interface Timing { median: number, max: number }
type Results = Map<string, Map<number, Timing>>
/** The tables bulk seeding fills. */
const SEEDED_TABLES = ['users', 'posts', 'audit_logs', 'organizations', 'organization_members']
/** The states each database is measured in, in order: PostgreSQL's tables before and after VACUUM. */
const PHASES: Record<string, string[]> = {
  sqlite: ['as loaded'],
  postgres: ['freshly loaded and analysed (autovacuum held off)', 'after VACUUM (ANALYZE)']
}

/** The targets at the largest size (docs/performance.md, "Scale"). */
const TARGETS = {
  medianMs: { sqlite: 10, postgres: 20 } as Record<string, number>, growth: 3, healthMs: 50, startupMs: 5000
}

const schemaOf = (size: number) => `bench_scale_${size}`

/** The database URL for one size: a fresh SQLite file, or a fresh PostgreSQL schema. */
async function freshDatabase (kind: string, size: number, dir: string): Promise<string> {
  if (kind === 'sqlite') return `sqlite://${join(dir, `scale-${size}.db`)}`
  return await freshPostgresSchema(schemaOf(size))
}

async function seed (databaseUrl: string, size: number): Promise<number> {
  const began = performance.now()
  // PostgreSQL without the service's query timeouts, which seeding a million rows exceeds.
  const database = databaseUrl.startsWith('sqlite:')
    ? openDatabase(loadConfig({ DATABASE_URL: databaseUrl, JWT_SECRET }).database)
    : postgresWithoutTimeouts(databaseUrl)
  try {
    await migrateToLatest(database.db, database.dialect)
    // Held off until vacuum() (PostgreSQL 13 and later vacuum insert-only tables too), so the
    // first phase measures the tables as loaded, whenever autovacuum would have come.
    if (database.dialect === 'postgres') {
      for (const table of SEEDED_TABLES) await sql`alter table ${sql.table(table)} set (autovacuum_enabled = false)`.execute(database.db)
    }
    await bulkSeed(database.db, database.dialect, size)
    await bulkSeedOrganizations(database.db, database.dialect, membersAt(size))
    // The admin that reads everything: created here, signed in through the API.
    await database.db.insertInto('user_roles').values({ user_id: '00000000-0000-7000-8000-000000000000', role: 'admin', created_at: new Date().toISOString() }).execute()
  } finally {
    await database.close()
  }
  return (performance.now() - began) / 1000
}

/**
 * VACUUM (ANALYZE) of the seeded tables, as autovacuum leaves them some time after a bulk insert,
 * and autovacuum back on. With its visibility map set, index-only scans (the counts) skip a
 * table's pages; on a table as loaded each of them visits the pages.
 */
async function vacuum (databaseUrl: string): Promise<number> {
  const began = performance.now()
  const database = postgresWithoutTimeouts(databaseUrl)
  try {
    for (const table of SEEDED_TABLES) {
      await sql`vacuum (analyze) ${sql.table(table)}`.execute(database.db)
      await sql`alter table ${sql.table(table)} reset (autovacuum_enabled)`.execute(database.db)
    }
  } finally {
    await database.close()
  }
  return (performance.now() - began) / 1000
}

/** Times `path` REQUESTS times in a row while /health is polled; answers the timings and /health's longest. */
async function measure (base: string, path: string, token: string | null): Promise<Timing & { health: number }> {
  const poll = { on: true }
  let health = 0
  const poller = (async () => {
    while (poll.on) {
      const began = performance.now()
      await fetch(`${base}/health`).then(async (response) => await response.arrayBuffer())
      health = Math.max(health, performance.now() - began)
      await new Promise((resolve) => setTimeout(resolve, HEALTH_EVERY_MS))
    }
  })()
  const times: number[] = []
  for (let index = 0; index < REQUESTS; index++) {
    const began = performance.now()
    const response = await fetch(`${base}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } })
    await response.arrayBuffer()
    times.push(performance.now() - began)
    if (!response.ok) throw new Error(`${path}: ${response.status}`)
  }
  poll.on = false
  await poller
  return { median: median(times), max: Math.max(...times), health }
}

const MEMBERS = `/api/v1/organizations/${ORGANIZATION}/members`

/**
 * Each request, with the admin's token unless anonymous or as the member of 1,000 organizations;
 * `matches`: the share of the collection it selects, where bulkSeed makes it one in 10 (the
 * count reaches its cap, 1,000 by default, from 10,000 rows) or one in 1,000. The audit log has no
 * search (docs/api.md, "Collections"): its filters select instead.
 */
const REQUESTS_MEASURED: Array<{ path: string, anonymous?: boolean, member?: boolean, matches?: string }> = [
  { path: '/api/v1/users?limit=20' },
  { path: '/api/v1/users?limit=20&page=500' },
  { path: '/api/v1/users?limit=20&cursor=' },
  { path: '/api/v1/users?limit=20&sort=-created_at' },
  { path: '/api/v1/users?limit=20&search=zebrafish', matches: '1 in 1,000' },
  { path: '/api/v1/users?limit=20&search=jones', matches: '1 in 10' },
  { path: '/api/v1/users?limit=20&search=smith' },
  { path: '/api/v1/users?limit=20&search=nomatch' },
  { path: '/api/v1/users?limit=20&search=sm' },
  { path: '/api/v1/users?limit=20&search=qz' },
  { path: '/api/v1/users?limit=20&search=qz&cursor=' },
  { path: '/api/v1/users?limit=20&createdAfter=2025-01-01' },
  { path: '/api/v1/posts?limit=20' },
  { path: '/api/v1/posts?limit=20&status=draft' },
  { path: '/api/v1/posts?limit=20', anonymous: true },
  { path: '/api/v1/posts?limit=20&search=zebrafish', matches: '1 in 1,000' },
  { path: '/api/v1/posts?limit=20&search=dogs', matches: '1 in 10' },
  { path: '/api/v1/posts?limit=20&search=lorem' },
  { path: '/api/v1/users/00000000-0000-7000-8000-000000000007/posts?limit=20' },
  { path: '/api/v1/audit-logs?limit=20' },
  { path: '/api/v1/audit-logs?limit=20&event=auth.login' },
  { path: '/api/v1/audit-logs?limit=20&event=auth.logout', matches: '1 in 10' },
  { path: '/api/v1/audit-logs?limit=20&actor_id=00000000-0000-7000-8000-000000000007', matches: '1 in 1,000' },
  { path: '/api/v1/audit-logs?limit=20&createdAfter=2025-01-01' },
  { path: `${MEMBERS}?limit=20`, member: true },
  { path: `${MEMBERS}?limit=20&page=500`, member: true },
  { path: `${MEMBERS}?limit=20&cursor=`, member: true },
  { path: `${MEMBERS}?limit=20&search=smith`, member: true },
  { path: `${MEMBERS}?limit=20&search=zebrafish`, member: true },
  { path: '/api/v1/organizations?limit=20', member: true },
  { path: '/api/v1/organizations?limit=20&cursor=', member: true },
  { path: '/api/v1/organizations?limit=20&search=zebrafish', member: true }
]

/**
 * Signs in as a fresh account, registered once per size and set up in the database by
 * `setUp` (the seeded users have no password, and none can be set through the API); its access token.
 */
async function accountToken (
  base: string,
  databaseUrl: string,
  email: string,
  setUp: (db: Db, id: string) => Promise<unknown>
): Promise<string> {
  const password = 'bench-password-long-enough'
  const registered = await fetch(`${base}/api/v1/users`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, name: 'Bench', password })
  })
  if (registered.status === 201) {
    const created = await registered.json() as { data: { id: string } }
    const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, JWT_SECRET }).database)
    await setUp(database.db, created.data.id)
    await database.close()
  } else {
    await registered.arrayBuffer()
  }
  return (await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email, password }) })).data.access_token as string
}

interface Tokens { admin: string, member: string }

/** The admin's token, and that of a member of MEMBERSHIPS organizations (ORGANIZATION among them). */
async function tokens (base: string, databaseUrl: string, size: number): Promise<Tokens> {
  const now = new Date().toISOString()
  const admin = await accountToken(base, databaseUrl, `admin-${size}@example.com`, async (db, id) =>
    await db.insertInto('user_roles').values({ user_id: id, role: 'admin', created_at: now }).execute())
  // Every step-th organization, the first (the largest) included; all of them below MEMBERSHIPS.
  const step = Math.max(1, Math.floor(membersAt(size) / MEMBERSHIPS))
  const organizations = Array.from({ length: Math.min(MEMBERSHIPS, membersAt(size)) }, (_, index) =>
    `00000003-0000-7000-8000-${String(index * step).padStart(12, '0')}`)
  const member = await accountToken(base, databaseUrl, `member-${size}@example.com`, async (db, id) =>
    await db.insertInto('organization_members').values(organizations.map((organization) =>
      ({ organization_id: organization, user_id: id, role: 'member', created_at: now }))).execute())
  return { admin, member }
}

/**
 * Each request of REQUESTS_MEASURED timed into `results` at `size` (named as the table shows it);
 * answers the longest /health meanwhile.
 */
async function measureAll (
  base: string, tokens: Tokens, size: number, results: Results, requests = REQUESTS_MEASURED
): Promise<number> {
  let longest = 0
  for (const request of requests) {
    const as = request.anonymous === true ? ' (anonymous)' : request.member === true ? ' (member)' : ''
    const name = `\`GET ${request.path}\`${as}${request.matches === undefined ? '' : `, matching ${request.matches}`}`
    const token = request.anonymous === true ? null : request.member === true ? tokens.member : tokens.admin
    const timing = await measure(base, request.path, token)
    longest = Math.max(longest, timing.health)
    if (!results.has(name)) results.set(name, new Map())
    results.get(name)?.set(size, timing)
    process.stdout.write(`  ${name}: median ${timing.median.toFixed(1)} ms, max ${timing.max.toFixed(1)} ms, /health max ${timing.health.toFixed(1)} ms\n`)
  }
  return longest
}

/** One state of the database measured at every size: each request's timings, the longest /health per size. */
interface Phase { steady: Results, health: Map<number, number> }

interface Measured {
  phases: Phase[]
  purging: Results
  purgingHealth: number
  startup: number
  /** The filtered requests at the largest size, last phase, counting up to COUNT_LIMITS.max. */
  widestCount: Results
}

async function run (kind: string, size: number, dir: string, measured: Measured): Promise<void> {
  const databaseUrl = await freshDatabase(kind, size, dir)
  const seconds = await seed(databaseUrl, size)
  process.stdout.write(`${kind} ${size}: seeded in ${seconds.toFixed(0)} s; load average ${loadAverage()}\n`)
  const env = { ...serviceEnv(join(dir, 'unused.db')), DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', RATE_LIMIT_ADMIN_MAX: '1000000000' }
  const server = [...START_FLAGS, join(ROOT, 'dist', 'src', 'server.js')]
  try {
    // The steady state: a retention that keeps the seeded entries (dated 2025), so no purge runs.
    const steady = await start(server, { ...env, AUDIT_RETENTION_DAYS: '36500' }, join(dir, 'server.log'))
    try {
      const signedIn = await tokens(steady.base, databaseUrl, size)
      for (const [index, phase] of measured.phases.entries()) {
        if (index > 0) process.stdout.write(`  VACUUM (ANALYZE) in ${(await vacuum(databaseUrl)).toFixed(0)} s; load average ${loadAverage()}\n`)
        phase.health.set(size, await measureAll(steady.base, signedIn, size, phase.steady))
      }
    } finally {
      await stop(steady.child)
    }
    if (size !== SIZES.at(-1)) return
    // What a deployment that counts further pays (docs/api.md, "Collections at scale"): the same
    // filtered requests, counting up to COLLECTION_COUNT_LIMIT's largest value.
    const widest = await start(server, { ...env, AUDIT_RETENTION_DAYS: '36500', COLLECTION_COUNT_LIMIT: String(COUNT_LIMITS.max) }, join(dir, 'server.log'))
    try {
      process.stdout.write(`  counting up to ${COUNT_LIMITS.max.toLocaleString('en')} matches:\n`)
      const counted = REQUESTS_MEASURED.filter((request) => request.matches !== undefined || /search=|createdAfter=|event=/.test(request.path))
      await measureAll(widest.base, await tokens(widest.base, databaseUrl, size), size, measured.widestCount, counted)
    } finally {
      await stop(widest.child)
    }
    // The default retention: every seeded entry is past it and the purge starts with the service.
    const starting = performance.now()
    const purging = await start(server, env, join(dir, 'server.log'))
    measured.startup = performance.now() - starting
    process.stdout.write(`  /health answered ${measured.startup.toFixed(0)} ms after a start with every audit entry past retention; while they are purged:\n`)
    try {
      const signedIn = await tokens(purging.base, databaseUrl, size)
      measured.purgingHealth = await measureAll(purging.base, signedIn, size, measured.purging)
    } finally {
      await stop(purging.child)
    }
  } finally {
    if (kind !== 'sqlite') await dropPostgresSchema(schemaOf(size))
  }
}

/**
 * A database's table for one phase, with its targets at the largest size. The last phase's
 * table also gives the requests while the purge runs, and the start-up before it.
 */
function table (kind: string, label: string, phase: Phase, measured: Measured | null): string {
  const { steady, health } = phase
  const ms = (value: number | undefined) => value === undefined ? '—' : `${value.toFixed(1)}`
  const smallest = SIZES[0] ?? 0
  const largest = SIZES.at(-1) ?? 0
  const purge = measured === null
    ? null
    : { results: measured.purging, health: measured.purgingHealth, startup: measured.startup }
  const purgeHeading = purge === null ? '' : ` ${largest.toLocaleString('en')} rows while the purge runs: median / max ms |`
  const lines = [
    `### ${kind}, ${label}`,
    '',
    `| request | ${SIZES.map((size) => `${size.toLocaleString('en')} rows: median / max ms`).join(' | ')} | growth of the median ${smallest.toLocaleString('en')} → ${largest.toLocaleString('en')} |${purgeHeading}`,
    `|---|${SIZES.map(() => '---').join('|')}|---|${purge === null ? '' : '---|'}`
  ]
  for (const [name, bySize] of steady) {
    const first = bySize.get(smallest)
    const last = bySize.get(largest)
    const growth = first !== undefined && last !== undefined ? `× ${(last.median / first.median).toFixed(2)}` : '—'
    const during = purge?.results.get(name)?.get(largest)
    lines.push(`| ${name} | ${SIZES.map((size) => `${ms(bySize.get(size)?.median)} / ${ms(bySize.get(size)?.max)}`).join(' | ')} | ${growth} |${purge === null ? '' : ` ${ms(during?.median)} / ${ms(during?.max)} |`}`)
  }
  lines.push(`| longest \`GET /health\` while these ran | ${SIZES.map((size) => `${ms(health.get(size))}`).join(' | ')} | |${purge === null ? '' : ` ${ms(purge.health)} |`}`)
  if (purge !== null) lines.push(`| start-up until \`GET /health\` answers, every audit entry past retention | ${SIZES.map(() => '').join(' | ')} | | ${ms(purge.startup)} |`)
  lines.push('')
  const medians = (results: Results) => [...results.values()].map((bySize) => bySize.get(largest)?.median ?? Infinity)
  const growths = [...steady.values()]
    .map((bySize) => (bySize.get(largest)?.median ?? Infinity) / (bySize.get(smallest)?.median ?? 1))
  const verdict = (holds: boolean) => holds ? 'holds' : 'MISSED'
  const slowest = Math.max(...medians(steady))
  const slowestPurging = purge === null ? 0 : Math.max(...medians(purge.results))
  const steepest = Math.max(...growths)
  const longestHealth = Math.max(health.get(largest) ?? Infinity, purge?.health ?? 0)
  const medianTarget = TARGETS.medianMs[kind] ?? 0
  if (measured !== null && measured.widestCount.size > 0) {
    lines.push(
      `The filtered requests at ${largest.toLocaleString('en')} rows, ${label}, counting up to the default ${COUNT_LIMITS.default.toLocaleString('en')} matches (above) and up to ${COUNT_LIMITS.max.toLocaleString('en')} (\`COLLECTION_COUNT_LIMIT=${COUNT_LIMITS.max}\`):`,
      '',
      `| request | ${COUNT_LIMITS.default.toLocaleString('en')}: median ms | ${COUNT_LIMITS.max.toLocaleString('en')}: median ms | × |`,
      '|---|---|---|---|'
    )
    for (const [name, bySize] of measured.widestCount) {
      const counted = steady.get(name)?.get(largest)?.median
      const widest = bySize.get(largest)?.median
      lines.push(`| ${name} | ${ms(counted)} | ${ms(widest)} | ${counted === undefined || widest === undefined ? '—' : `× ${(widest / counted).toFixed(2)}`} |`)
    }
    lines.push('')
  }
  lines.push(
    `Targets at ${largest.toLocaleString('en')} rows, ${label}: slowest median ${slowest.toFixed(1)} ms` +
      `${purge === null ? '' : `, ${slowestPurging.toFixed(1)} ms while the purge runs`} (≤ ${medianTarget} ms: ${verdict(Math.max(slowest, slowestPurging) <= medianTarget)}); ` +
      `steepest growth × ${steepest.toFixed(2)} (≤ ${TARGETS.growth}: ${verdict(steepest <= TARGETS.growth)}); ` +
      `longest /health ${ms(longestHealth)} ms (≤ ${TARGETS.healthMs} ms: ${verdict(longestHealth <= TARGETS.healthMs)})` +
      `${purge === null ? '' : `; start-up ${ms(purge.startup)} ms (≤ ${TARGETS.startupMs} ms: ${verdict(purge.startup <= TARGETS.startupMs)})`}.`,
    ''
  )
  return lines.join('\n')
}

const dir = mkdtempSync(join(tmpdir(), 'users-api-scale-'))
try {
  const sizes = (count: (size: number) => number) => SIZES.map((size) => count(size).toLocaleString('en')).join(', ')
  const heading = `## ${new Date().toISOString().slice(0, 10)} — scale: ${sizes((size) => size)} users, posts and ` +
    `audit entries; one organization of ${sizes(membersAt)} members, one account in ` +
    `${MEMBERSHIPS.toLocaleString('en')} organizations — ${REQUESTS} sequential requests each, ` +
    `/health polled every ${HEALTH_EVERY_MS} ms — ${machine()}, load average ${loadAverage()} at the start`
  appendFileSync(join(ROOT, 'bench', 'RESULTS.md'), `\n${heading}\n\n`)
  // Each database's tables as soon as they are measured: a later failure keeps them.
  for (const kind of DATABASES) {
    const labels = PHASES[kind] ?? []
    const measured: Measured = {
      phases: labels.map(() => ({ steady: new Map(), health: new Map() })),
      purging: new Map(),
      purgingHealth: Infinity,
      startup: Infinity,
      widestCount: new Map()
    }
    for (const size of SIZES) await run(kind, size, dir, measured)
    const sections = measured.phases.map((phase, index) =>
      table(kind, labels[index] ?? '', phase, index === labels.length - 1 ? measured : null))
    const section = `${sections.join('\n')}\nLoad average ${loadAverage()} at the end of ${kind}.\n`
    process.stdout.write(`\n${section}\n`)
    appendFileSync(join(ROOT, 'bench', 'RESULTS.md'), `${section}\n`)
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
