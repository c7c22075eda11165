import { appendFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import { ConsoleCookies, SESSION_COOKIE } from '../src/console/session-cookies.js'
import { loadConfig } from '../src/config/index.js'
import { bulkSeed } from '../src/store/bulk-seed.js'
import { openDatabase } from '../src/store/database.js'
import { migrateToLatest } from '../src/store/migrations/index.js'
import {
  dropPostgresSchema, freshPostgresSchema, json, JWT_SECRET, loadAverage, machine, measuredCommit, median,
  postgresWithoutTimeouts, ROOT, START_FLAGS, serviceEnv, start, stop
} from './harness.js'

/**
 * `npm run bench:console`: the console's users screen (`GET /console/users`, docs/console.md) at
 * 10k and 1M users: its target is 50 ms at 1,000,000 users on SQLite and PostgreSQL
 * (docs/performance.md, "The console"). For each database and size, users (with posts and audit entries) are generated
 * in bulk, the service is started on them, an admin signs in through the API, and its session is
 * sealed into the console's cookie by this process (the console's own sign-in needs the
 * authorization server, which the measurement does not: the cookie is what the browser would
 * hold). Each screen is then asked REQUESTS times one after another, after WARM_UP requests:
 * the first page, a rare and a common name searched, an address looked up, the second page;
 * and beside them the API request the first page makes, so that the page's own cost shows.
 * PostgreSQL's tables are measured as loaded and analysed, autovacuum held off meanwhile so
 * that a background vacuum does not land in one size's figures only.
 * BENCH_CONSOLE_SIZES (default 10000,1000000), BENCH_CONSOLE_DATABASES (sqlite,postgres),
 * BENCH_POSTGRES_URL (harness.ts; a schema per size).
 */
const SIZES = (process.env.BENCH_CONSOLE_SIZES ?? '10000,1000000').split(',').map(Number)
const DATABASES = (process.env.BENCH_CONSOLE_DATABASES ?? 'sqlite,postgres').split(',')
const REQUESTS = 30
const WARM_UP = 3
/** The users screen within 50 ms (median) at the largest size (docs/performance.md, "The console"). */
const TARGET_MS = 50
/** An address every size holds (bulkSeed numbers its users from 0). */
const ADDRESS = 'user500@example.com'
const SEEDED_TABLES = ['users', 'posts', 'audit_logs']
const LABELS: Record<string, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

/** A page's answer as the bench checks it: the path asked, the HTML or JSON that came back. */
type Check = (body: string) => string | null

const hasTable: Check = (body) => body.includes('<table>') ? null : 'no <table> in the page'
/** An address lookup finds one user: one row in the table's body (its head is the other `<tr>`). */
const oneRow: Check = (body) => {
  const rows = (body.match(/<tr>/g) ?? []).length - 1
  return body.includes('<table>') && rows === 1 && body.includes(ADDRESS) ? null : `${rows} rows, not exactly one holding ${ADDRESS}`
}
const fullPage: Check = (body) => {
  const length = (JSON.parse(body) as { data?: unknown[] }).data?.length
  return length === 25 ? null : `${String(length)} users, not 25`
}

interface Asked { name: string, path: string, api?: boolean, check: Check }

/** The screens measured; the second page's path is read from the first page's link at each size. */
const SCREENS: Asked[] = [
  { name: '`GET /console/users`', path: '/console/users', check: hasTable },
  { name: '`GET /console/users?search=zebrafish`, matching 1 in 1,000', path: '/console/users?search=zebrafish', check: hasTable },
  { name: '`GET /console/users?search=jones`, matching 1 in 10', path: '/console/users?search=jones', check: hasTable },
  { name: `\`GET /console/users?search=${ADDRESS}\`, an address looked up`, path: `/console/users?search=${ADDRESS}`, check: oneRow }
]
const SECOND_PAGE = '`GET /console/users?cursor=…`, the second page (its `Next page` link)'
const API: Asked = {
  name: '`GET /api/v1/users?limit=25&cursor=&sort=-created_at` (the API, bearer token; for comparison)',
  path: '/api/v1/users?limit=25&cursor=&sort=-created_at',
  api: true,
  check: fullPage
}

interface Timing { median: number, max: number }
/** A request's name → `<database> <size>` → timing. */
type Results = Map<string, Map<string, Timing>>
const key = (kind: string, size: number) => `${kind} ${size}`

const COMMIT = measuredCommit()

const schemaOf = (size: number) => `bench_console_${size}`

/** A fresh database of `size` users (bulkSeed's); its URL and the seconds seeding took. */
async function seeded (kind: string, size: number, dir: string): Promise<{ url: string, seconds: number }> {
  const url = kind === 'sqlite' ? `sqlite://${join(dir, `console-${size}.db`)}` : await freshPostgresSchema(schemaOf(size))
  const began = performance.now()
  const database = kind === 'sqlite' ? openDatabase(loadConfig({ DATABASE_URL: url, JWT_SECRET }).database) : postgresWithoutTimeouts(url)
  try {
    await migrateToLatest(database.db, database.dialect)
    if (database.dialect === 'postgres') {
      for (const table of SEEDED_TABLES) await sql`alter table ${sql.table(table)} set (autovacuum_enabled = false)`.execute(database.db)
    }
    await bulkSeed(database.db, database.dialect, size)
  } finally {
    await database.close()
  }
  return { url, seconds: (performance.now() - began) / 1000 }
}

/**
 * An admin's API session: registered through the API (the seeded users have no password), made
 * admin in the database (no API grants the first admin), signed in. Both tokens: the console's
 * cookie holds the pair.
 */
async function adminSession (
  base: string, databaseUrl: string, size: number
): Promise<{ access: string, refresh: string }> {
  const email = `admin-${size}@example.com`
  const password = 'bench-password-long-enough'
  const created = await json(`${base}/api/v1/users`, { method: 'POST', body: JSON.stringify({ email, name: 'Bench', password }) })
  const database = openDatabase(loadConfig({ DATABASE_URL: databaseUrl, JWT_SECRET }).database)
  try {
    await database.db.insertInto('user_roles')
      .values({ user_id: created.data.id as string, role: 'admin', created_at: new Date().toISOString() }).execute()
  } finally {
    await database.close()
  }
  const { data } = await json(`${base}/api/v1/auth/login`, { method: 'POST', body: JSON.stringify({ email, password }) })
  return { access: data.access_token as string, refresh: data.refresh_token as string }
}

/**
 * One answer, checked: a console request answered otherwise than 200 (a 303 to the sign-in
 * when the cookie did not hold, not followed) or without what it should show fails the run.
 */
async function ask (url: string, headers: Record<string, string>, check: Check): Promise<string> {
  const response = await fetch(url, { headers, redirect: 'manual' })
  const body = await response.text()
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${response.headers.get('location') ?? body.slice(0, 300)}`)
  const problem = check(body)
  if (problem !== null) throw new Error(`${url}: ${problem}`)
  return body
}

/** WARM_UP answers, then REQUESTS timed one after another, each checked. */
async function measure (url: string, headers: Record<string, string>, check: Check): Promise<Timing> {
  for (let index = 0; index < WARM_UP; index++) await ask(url, headers, check)
  const times: number[] = []
  for (let index = 0; index < REQUESTS; index++) {
    const began = performance.now()
    await ask(url, headers, check)
    times.push(performance.now() - began)
  }
  return { median: median(times), max: Math.max(...times) }
}

/** The `Next page` link of a first page, its HTML escapes undone. */
function nextPage (html: string): string {
  const href = /href="(\/console\/users\?cursor=[^"]+)"/.exec(html)?.[1]
  if (href === undefined) throw new Error('the first page has no Next page link')
  return href.replace(/&quot;/g, '"').replace(/&#39;/g, '\'').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')
}

async function run (kind: string, size: number, dir: string, results: Results, loads: string[]): Promise<void> {
  const { url, seconds } = await seeded(kind, size, dir)
  process.stdout.write(`${kind} ${size.toLocaleString('en')}: seeded in ${seconds.toFixed(0)} s; load average ${loadAverage()}\n`)
  const env = {
    ...serviceEnv(join(dir, 'unused.db')), DATABASE_URL: url, LOG_LEVEL: 'warn', RATE_LIMIT_ADMIN_MAX: '1000000000', AUDIT_RETENTION_DAYS: '36500'
  }
  try {
    const server = await start([...START_FLAGS, join(ROOT, 'dist', 'src', 'server.js')], env, join(dir, 'server.log'))
    try {
      const session = await adminSession(server.base, url, size)
      // The service's sealing keys: loadConfig derives them from the same JWT_SECRET (no SEALING_KEY).
      const cookie = new ConsoleCookies(loadConfig(env).sealing.keys).newSession(session.access, session.refresh)
      const asConsole = { cookie: `${SESSION_COOKIE}=${cookie}` }
      const second = nextPage(await ask(`${server.base}/console/users`, asConsole, hasTable))
      const requests = [...SCREENS, { name: SECOND_PAGE, path: second, check: hasTable }, API]
      loads.push(`${LABELS[kind] ?? kind} ${size.toLocaleString('en')}: ${loadAverage()}`)
      for (const request of requests) {
        const headers = request.api === true ? { authorization: `Bearer ${session.access}` } : asConsole
        const timing = await measure(`${server.base}${request.path}`, headers, request.check)
        if (!results.has(request.name)) results.set(request.name, new Map())
        results.get(request.name)?.set(key(kind, size), timing)
        process.stdout.write(`  ${request.name}: median ${timing.median.toFixed(1)} ms, max ${timing.max.toFixed(1)} ms\n`)
      }
    } finally {
      await stop(server.child)
    }
  } finally {
    if (kind === 'sqlite') rmSync(join(dir, `console-${size}.db`), { force: true })
    else await dropPostgresSchema(schemaOf(size))
  }
}

/** The section: a row per request, median / max per database and size, growth and verdict per database. */
function section (results: Results, loads: string[], loadAtStart: string, failure: string | null): string {
  const ms = (timing: Timing | undefined) => timing === undefined ? '—' : `${timing.median.toFixed(1)} / ${timing.max.toFixed(1)}`
  const smallest = SIZES[0] ?? 0
  const largest = SIZES.at(-1) ?? 0
  const sizeLabel = (size: number) => size >= 1_000_000 ? `${size / 1_000_000}M` : size >= 1000 ? `${size / 1000}k` : `${size}`
  const columns = DATABASES.flatMap((kind) => SIZES.map((size) => `${LABELS[kind] ?? kind} ${size.toLocaleString('en')}: median / max ms`))
  const lines = [
    '',
    `## ${new Date().toISOString().slice(0, 10)} — commit ${COMMIT} — console users screen: ${SIZES.map((size) => size.toLocaleString('en')).join(', ')} users ` +
      `(with as many posts and audit entries), ${REQUESTS} sequential requests each after ${WARM_UP} to warm up, ` +
      `signed in by the console's session cookie, ${DATABASES.map((kind) => LABELS[kind] ?? kind).join(' and ')}` +
      `${DATABASES.includes('postgres') ? ' (PostgreSQL as loaded and analysed, autovacuum held off)' : ''} — ${machine()}, ` +
      `load average ${loadAtStart} at the start and ${loadAverage()} at the end`,
    '',
    `| request | ${columns.join(' | ')} | ${DATABASES.map((kind) => `${LABELS[kind] ?? kind} growth ${sizeLabel(smallest)} → ${sizeLabel(largest)}`).join(' | ')} | ` +
      `${DATABASES.map((kind) => `${LABELS[kind] ?? kind} ≤ ${TARGET_MS} ms at ${sizeLabel(largest)}`).join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|${DATABASES.map(() => '---').join('|')}|${DATABASES.map(() => '---').join('|')}|`
  ]
  const verdicts = new Map<string, boolean>()
  for (const [name, byKey] of results) {
    const api = name === API.name
    const growth = DATABASES.map((kind) => {
      const first = byKey.get(key(kind, smallest))
      const last = byKey.get(key(kind, largest))
      return first === undefined || last === undefined || smallest === largest ? '—' : `× ${(last.median / first.median).toFixed(2)}`
    })
    const verdict = DATABASES.map((kind) => {
      const last = byKey.get(key(kind, largest))
      if (api) return 'reported'
      if (last === undefined) return '—'
      const holds = last.median <= TARGET_MS
      verdicts.set(kind, (verdicts.get(kind) ?? true) && holds)
      return holds ? 'holds' : 'MISSED'
    })
    const cells = DATABASES.flatMap((kind) => SIZES.map((size) => ms(byKey.get(key(kind, size)))))
    lines.push(`| ${name} | ${cells.join(' | ')} | ${growth.join(' | ')} | ${verdict.join(' | ')} |`)
  }
  lines.push('')
  const overall = DATABASES.map((kind) => {
    const measured = [...results.entries()]
      .filter(([name, byKey]) => name !== API.name && byKey.has(key(kind, largest)))
    if (measured.length < SCREENS.length + 1) return `${LABELS[kind] ?? kind}: not measured in full at ${largest.toLocaleString('en')}`
    const slowest = Math.max(...measured.map(([, byKey]) => byKey.get(key(kind, largest))?.median ?? Infinity))
    return `${LABELS[kind] ?? kind}: slowest screen median ${slowest.toFixed(1)} ms (${verdicts.get(kind) === true ? 'holds' : 'MISSED'})`
  })
  lines.push(`Target: every users screen's median ≤ ${TARGET_MS} ms at ${largest.toLocaleString('en')} users. ${overall.join('; ')}. ` +
    `Load average when each was measured: ${loads.join(', ')}.`)
  if (failure !== null) lines.push('', `The run stopped early: ${failure}`)
  lines.push('')
  return lines.join('\n')
}

const loadAtStart = loadAverage()
const dir = mkdtempSync(join(tmpdir(), 'users-api-console-'))
const results: Results = new Map()
const loads: string[] = []
let failure: string | null = null
try {
  for (const kind of DATABASES) {
    for (const size of SIZES) await run(kind, size, dir, results, loads)
  }
} catch (error) {
  failure = error instanceof Error ? error.message : String(error)
  throw error
} finally {
  // What was measured, even when a later size failed: the figures are the point of the run.
  if (results.size > 0) {
    const text = section(results, loads, loadAtStart, failure)
    process.stdout.write(`${text}\n`)
    appendFileSync(join(ROOT, 'bench', 'RESULTS.md'), text)
  }
  rmSync(dir, { recursive: true, force: true })
}
