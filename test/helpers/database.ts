/**
 * Test databases: the backends to run on, a fresh SQLite or PostgreSQL database per test, query plans, rows
 * to insert directly.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Compilable, CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely'
import type pg from 'pg'
import type { Database } from '../../src/store/database.js'
import { migrateToLatest } from '../../src/store/migrations/index.js'
import type { AuditLogsTable } from '../../src/store/types.js'
import type { TestContext } from './context.js'

/** The storage backends to run storage-dependent tests on: SQLite always, PostgreSQL when configured. */
export function backends (): Array<{ name: string, url: string | null }> {
  const list: Array<{ name: string, url: string | null }> = [{ name: 'sqlite', url: null }]
  const postgres = process.env.TEST_DATABASE_URL
  if (postgres !== undefined && postgres !== '') list.push({ name: 'postgres', url: postgres })
  return list
}

const redisUrl = process.env.TEST_REDIS_URL
/** `REDIS_URL` for an app or a service under test when `TEST_REDIS_URL` is set, else nothing. */
export const REDIS_ENV: Record<string, string> = redisUrl !== undefined && redisUrl !== '' ? { REDIS_URL: redisUrl } : {}

/** The name of a backend's test, ` + redis` added when the app runs with Redis (`TEST_REDIS_URL`). */
export function suiteName (backend: { name: string }): string {
  return `${backend.name}${REDIS_ENV.REDIS_URL === undefined ? '' : ' + redis'}`
}

/** A SQLite database file in a temporary directory removed after the test: its URL and path. */
export function sqliteFile (t: TestContext): { url: string, path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'users-api-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'app.db')
  return { url: `sqlite://${path}`, path }
}

/** `url` with its database replaced by `name`. */
function onDatabase (url: string, name: string): string {
  const other = new URL(url)
  other.pathname = `/${name}`
  return other.toString()
}

/**
 * The migrations' contents, hashed: a template database made by other migrations (an earlier
 * commit, a migration being written) is never copied.
 */
export function migrationsFingerprint (): string {
  const folder = new URL('../../src/store/migrations/', import.meta.url)
  const hash = createHash('sha256')
  for (const name of readdirSync(folder).sort()) hash.update(name).update(readFileSync(new URL(name, folder)))
  return hash.digest('hex').slice(0, 16)
}

/** Test databases are named `test_<pid>_…`, the migrated template `test_template_<fingerprint>`. */
export const TEMPLATE_PREFIX = 'test_template_'

/** Held while a test process makes the template, so that the others wait for it rather than make it too. */
const TEMPLATE_LOCK = 7_302_015_054

/**
 * The template database every PostgreSQL test database is copied from, migrated: made once per
 * set of migrations by whichever test process needs it first. Copying it takes about 60 ms;
 * migrating a new database took 450–650 ms, most of a PostgreSQL test's app build
 * (docs/testing.md, "Where the time goes"). It takes no connections (autovacuum's included), as
 * a copy's source must have none.
 */
async function migratedTemplate (postgresUrl: string): Promise<string> {
  const name = `${TEMPLATE_PREFIX}${migrationsFingerprint()}`
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: postgresUrl })
  await client.connect()
  try {
    await client.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK])
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name])
    if (rowCount === 0) {
      // Made under another name and renamed once migrated: a process stopped halfway leaves no template.
      const building = `${name}_building`
      await client.query(`drop database if exists "${building}"`)
      await client.query(`create database "${building}"`)
      const pool = new pg.Pool({ connectionString: onDatabase(postgresUrl, building), max: 1 })
      const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) })
      try {
        await migrateToLatest(db, 'postgres')
      } finally {
        await db.destroy()
      }
      await client.query(`alter database "${building}" rename to "${name}"`)
      await client.query(`alter database "${name}" with is_template true allow_connections false`)
    }
  } finally {
    await client.end()
  }
  return name
}

let template: Promise<string> | undefined
let admin: pg.Pool | undefined
let databaseCounter = 0

/**
 * A fresh, empty database for one test: SQLite in memory (or, `shared`, in a temporary file
 * for several instances, restarts or WAL, removed at teardown), or on PostgreSQL a new database
 * copied from the migrated template, dropped at teardown (after the apps on it closed: tap runs
 * a test's teardowns last registered first), so tests never share state.
 */
export async function freshDatabaseUrl (
  t: TestContext,
  postgresUrl: string | null,
  options: { shared?: boolean } = {}
): Promise<string> {
  if (postgresUrl === null) {
    return options.shared === true ? sqliteFile(t).url : 'sqlite://:memory:'
  }
  template ??= migratedTemplate(postgresUrl)
  // Loaded here, not at the top: a run on SQLite alone need not load pg (docs/performance.md, "Start-up").
  const { default: pg } = await import('pg')
  // Idle, the pool lets the process exit.
  admin ??= new pg.Pool({ connectionString: postgresUrl, max: 2, allowExitOnIdle: true })
  const pool = admin
  const name = `test_${process.pid}_${Date.now()}_${databaseCounter++}`
  await pool.query(`create database "${name}" template "${await template}"`)
  // Forced: a connection a test left open must not keep its database. Not waited for (it takes
  // about 100 ms): the next test goes on meanwhile, and the process exits once it is done (the
  // pool idle); a process stopped first leaves it to drop-test-databases.ts.
  t.teardown(() => { pool.query(`drop database if exists "${name}" with (force)`).catch(() => {}) })
  return onDatabase(postgresUrl, name)
}

/**
 * How the database would run `query`, as the query compiles in the service. PostgreSQL's test
 * tables are tiny, so `table` is analyzed and sequential scans forbidden: the plan then shows
 * which index serves the query.
 */
export async function queryPlan (
  { db, dialect }: Database,
  table: string,
  query: Compilable<unknown>
): Promise<string> {
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

/**
 * From here on every `operation` on `table` fails with `message`, as a full disk or a lost
 * connection would fail it.
 */
export async function refuseWrites ({ database }: { database: Database }, operation: 'insert' | 'update', table: string, message: string): Promise<void> {
  const name = sql.raw(`${table}_refused`)
  const on = sql.raw(`before ${operation} on ${table}`)
  if (database.dialect === 'sqlite') {
    await sql`create trigger ${name} ${on} begin select raise(abort, ${sql.lit(message)}); end`.execute(database.db)
    return
  }
  await sql`create function ${name}() returns trigger language plpgsql as $$ begin raise exception ${sql.lit(message)}; end $$`.execute(database.db)
  await sql`create trigger ${name} ${on} for each row execute function ${name}()`.execute(database.db)
}
