import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { type Compilable, CompiledQuery, sql } from 'kysely'
import pg from 'pg'
import { loadConfig } from '../src/config.js'
import { createInstance } from '../src/instance.js'
import { REAUTHENTICATION_TTL_MS } from '../src/services/reauthentication.js'
import type { Database } from '../src/store/database.js'
import type { AuditLogsTable } from '../src/store/types.js'
import type { MailServer } from './mail-server.js'

/** Anything with tap's teardown, so helpers work in any (sub)test. */
export interface TestContext {
  teardown: (fn: () => unknown) => void
}

export const TEST_SECRET = 'test-secret-that-is-at-least-32-characters'

/** The security headers, exactly, on every response, errors, 404s, 429s and preflights included (docs/api.md, "Security headers"). */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-xss-protection': '1; mode=block',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': "default-src 'self';frame-ancestors 'none';script-src 'self' 'unsafe-inline';style-src 'self' 'unsafe-inline';img-src 'self' data: https:",
  // Added to the set: tokens and personal data must not be cached.
  'cache-control': 'no-store'
}

/** The storage backends to run storage-dependent tests on: SQLite always, PostgreSQL when configured. */
export function backends (): Array<{ name: string, url: string | null }> {
  const list: Array<{ name: string, url: string | null }> = [{ name: 'sqlite', url: null }]
  const postgres = process.env.TEST_DATABASE_URL
  if (postgres !== undefined && postgres !== '') list.push({ name: 'postgres', url: postgres })
  return list
}

let schemaCounter = 0

/** A SQLite database file in a temporary directory removed after the test: its URL and path. */
export function sqliteFile (t: TestContext): { url: string, path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'users-api-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'app.db')
  return { url: `sqlite://${path}`, path }
}

/** Settles as `promise` does; rejects if it has not within `withinMs`. */
export async function within<T> (what: string, withinMs: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${withinMs} ms: ${what}`)), withinMs)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Milliseconds until `check` answers true, asked every 10 ms (news from another instance has
 * no event here to await); Infinity if it has not within `limitMs`.
 */
export async function msUntil (check: () => Promise<boolean>, limitMs: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < limitMs) {
    if (await check()) return Date.now() - started
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return Infinity
}

/** Resolves once every app's Redis connection is ready (Redis calls do not queue while it connects). */
export async function redisReady (...apps: FastifyInstance[]): Promise<void> {
  for (const app of apps) {
    const redis = app.redis
    if (redis !== null && redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
  }
}

/**
 * The Cookie header that carries an /authorize answer's state cookie back to the callback:
 * `__Host-oauth_state` over HTTPS, `oauth_state` over http.
 */
export function stateCookie (authorize: { cookies: Array<{ name: string, value: string }> }): string {
  const cookie = authorize.cookies.find((entry) => entry.name === 'oauth_state' || entry.name === '__Host-oauth_state')
  if (cookie === undefined) throw new Error('no state cookie')
  return `${cookie.name}=${cookie.value}`
}

/** The password every test account is created with. */
export const TEST_PASSWORD = 'correct-horse-battery'

/**
 * A fresh, empty database for one test: SQLite in memory (or, `shared`, in a temporary file
 * for several instances, restarts or WAL, removed at teardown), or a new PostgreSQL schema
 * (removed after the suite by test/drop-test-schemas.ts), so tests never share state.
 */
export async function freshDatabaseUrl (t: TestContext, postgresUrl: string | null, options: { shared?: boolean } = {}): Promise<string> {
  if (postgresUrl === null) {
    return options.shared === true ? sqliteFile(t).url : 'sqlite://:memory:'
  }
  const schema = `test_${process.pid}_${Date.now()}_${schemaCounter++}`
  const admin = new pg.Client({ connectionString: postgresUrl })
  await admin.connect()
  await admin.query(`create schema "${schema}"`)
  await admin.end()
  const url = new URL(postgresUrl)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

export interface BuildOptions {
  /** PostgreSQL URL to isolate a schema in, or null for in-memory SQLite. */
  postgresUrl?: string | null
  /** Extra environment variables, as the service would read them. */
  env?: Record<string, string>
  /** Use this database URL as is (to share one database between two instances). */
  databaseUrl?: string
  /** Adds test-only routes before the app is ready. */
  extend?: (app: FastifyInstance) => void
}

/** Builds the app as the server does, ready for `app.inject`, closed at teardown. */
export async function build (t: TestContext, options: BuildOptions = {}): Promise<FastifyInstance> {
  const databaseUrl = options.databaseUrl ?? await freshDatabaseUrl(t, options.postgresUrl ?? null)
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    JWT_SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    CORS_ORIGINS: 'http://localhost:3000',
    // Tests of other features sign in far more often than a client may; the rate-limit
    // tests set their own limits.
    RATE_LIMIT_MAX: '1000000',
    RATE_LIMIT_AUTH_MAX: '1000000',
    RATE_LIMIT_ADMIN_MAX: '1000000',
    // Admin accounts in tests of other features are not enrolled in MFA; the MFA tests
    // set the roles that must use it.
    MFA_REQUIRED_ROLES: 'none',
    ...options.env
  })
  const app = createInstance(config)
  options.extend?.(app)
  t.teardown(async () => await app.close())
  await app.ready()
  return app
}

/**
 * How the database would run `query`, as the query compiles in the service. PostgreSQL's test
 * tables are tiny, so `table` is analyzed and sequential scans forbidden: the plan then shows
 * which index serves the query.
 */
export async function queryPlan ({ db, dialect }: Database, table: string, query: Compilable<unknown>): Promise<string> {
  const { sql: text, parameters } = query.compile()
  if (dialect === 'sqlite') {
    return (await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${text}`, [...parameters]))).rows.map((row) => row.detail).join('\n')
  }
  await sql`analyze ${sql.table(table)}`.execute(db)
  return await db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx)
    const explained = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${text}`, [...parameters]))
    return explained.rows.map((row) => row['QUERY PLAN']).join('\n')
  })
}

let emailCounter = 0

export function uniqueEmail (prefix = 'user'): string {
  return `${prefix}-${process.pid}-${emailCounter++}@example.com`
}

export interface Account {
  id: string
  email: string
  password: string
  token: string
}

/**
 * Registers through the API and signs in; optionally grants roles directly in the store. The
 * address is proved (the account claimed) unless `verified: false`, and the session stepped
 * up unless `reauthenticated: false` (docs/testing.md, "Test accounts"), so
 * tests of other features make sensitive changes as an owner who just proved it is them.
 */
export async function createAccount (
  app: FastifyInstance,
  options: { roles?: Array<'moderator' | 'admin' | 'super_admin'>, name?: string, verified?: boolean, reauthenticated?: boolean } = {}
): Promise<Account> {
  const email = uniqueEmail()
  const password = TEST_PASSWORD
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: options.name ?? 'Test User', password } })
  if (created.statusCode !== 201) throw new Error(`registration failed: ${created.body}`)
  const { id } = created.json().data
  if (options.verified !== false) await app.repositories.users.markEmailVerified(id, email)
  for (const role of options.roles ?? []) await app.repositories.users.addRole(id, role)
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
  const token: string = login.json().data.access_token
  // The step-up is granted in the store, as POST /auth/reauthenticate would with the password,
  // without paying for another hash on every account a test makes (that route has tests of its own).
  if (options.reauthenticated !== false) {
    await app.repositories.sessions.grantReauthentication(id, claimsOf(token).jti as string, new Date(Date.now() + REAUTHENTICATION_TTL_MS).toISOString())
  }
  return { id, email, password, token }
}

/**
 * Steps up the session of `token`, of an account without a password or second factor, as such
 * an account does: a code sent to its address `to`, taken from the test's mail server, given back.
 */
export async function stepUpWithEmailCode (app: FastifyInstance, token: string, smtp: MailServer, to: string): Promise<void> {
  const sent = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/reauthenticate/code', payload: { method: 'email' } }))
  if (sent.statusCode !== 202) throw new Error(`no code sent: ${sent.body}`)
  const message = await smtp.next((mail) => mail.to.includes(to) && mail.subject.endsWith('confirmation code'))
  const code = /is (\d{6})\./.exec(message.text)?.[1]
  const stepUp = await app.inject(withToken(token, { method: 'POST', url: '/api/v1/auth/reauthenticate', payload: { code } }))
  if (stepUp.statusCode !== 200) throw new Error(`step-up failed: ${stepUp.body}`)
}

export function withToken (token: string, options: InjectOptions): InjectOptions {
  return { ...options, headers: { ...options.headers, authorization: `Bearer ${token}` } }
}

/** The claims a JWT carries (its payload), read without checking the signature. */
export function claimsOf (token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())
}

/** Resolves once the clock has moved past the given instant (milliseconds). */
export async function clockPast (instant: number): Promise<void> {
  while (Date.now() <= instant) await new Promise((resolve) => setImmediate(resolve))
}

/** An `auth.login` audit row made `ageDays` ago, to insert directly (retention tests); `index` makes its id. */
export function auditRow (index: number, ageDays: number): AuditLogsTable {
  return {
    id: `01800000-0000-7000-8000-${String(index).padStart(12, '0')}`,
    event: 'auth.login',
    actor_id: null,
    target_id: null,
    ip: null,
    user_agent: null,
    outcome: 'success',
    details: '{}',
    created_at: new Date(Date.now() - ageDays * 24 * 60 * 60 * 1000).toISOString()
  }
}
