/**
 * Test databases: the backends to run on, a fresh SQLite database or PostgreSQL schema per test, query plans, rows
 * to insert directly.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Compilable, CompiledQuery, sql } from 'kysely'
import pg from 'pg'
import type { Database } from '../../src/store/database.js'
import type { AuditLogsTable } from '../../src/store/types.js'
import type { TestContext } from './context.js'

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

/**
 * A fresh, empty database for one test: SQLite in memory (or, `shared`, in a temporary file
 * for several instances, restarts or WAL, removed at teardown), or a new PostgreSQL schema
 * (removed after the suite by test/helpers/drop-test-schemas.ts), so tests never share state.
 */
export async function freshDatabaseUrl (
  t: TestContext,
  postgresUrl: string | null,
  options: { shared?: boolean } = {}
): Promise<string> {
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
