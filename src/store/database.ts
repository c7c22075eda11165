import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { type CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import type pg from 'pg'
import type { DatabaseConfig } from '../config/index.js'
import { QUERY_TIMEOUT_MESSAGE } from './errors.js'
import { type ReadRows, readThrough } from './prepared.js'
import type { DatabaseSchema, Db, Dialect } from './types.js'

const TIMESTAMPTZ_OID = 1184

export interface Database {
  db: Db
  dialect: Dialect
  /** Runs compiled reads: the prepared ones (prepared.ts) and collection pages (paginate.ts). */
  readRows: ReadRows
  close: () => Promise<void>
}

/** Distinct SQL texts whose prepared statements are kept (the service issues a few hundred). */
const STATEMENT_CACHE_SIZE = 500

/**
 * Kysely's SQLite driver prepares every query anew; preparing costs more than running a
 * small query. Statements are reused per SQL text (better-sqlite3 statements are reusable,
 * and all use is synchronous), least recently used dropped first.
 */
function cacheStatements (sqlite: SQLite.Database): void {
  const prepare = sqlite.prepare.bind(sqlite)
  const cache = new Map<string, SQLite.Statement>()
  sqlite.prepare = ((source: string) => {
    let statement = cache.get(source)
    if (statement === undefined) {
      statement = prepare(source)
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value ?? '')
    } else {
      cache.delete(source)
    }
    cache.set(source, statement)
    return statement
  }) as typeof sqlite.prepare
}

/** Each read statement's column names, for making its rows into objects. */
const columnNames = new WeakMap<SQLite.Statement, string[]>()

/**
 * Below Node 22 (module ABI 127) better-sqlite3 makes each row object through V8's generic
 * property calls, one per column; building them here instead cut a 20-row page's read by about
 * a fifth on Node 20. From Node 22 on it builds each row in one call, and rows are taken as it
 * gives them.
 */
const ROWS_BUILT_PER_COLUMN = Number(process.versions.modules) < 127

/** The statement's rows as arrays, made into objects here (see ROWS_BUILT_PER_COLUMN). */
function allAsObjects (statement: SQLite.Statement, parameters: readonly unknown[]): Array<Record<string, unknown>> {
  let names = columnNames.get(statement)
  if (names === undefined) {
    // Direct reads name their columns (no `select *`), so a statement's names never change.
    names = statement.columns().map((column) => column.name)
    columnNames.set(statement, names)
  }
  let values: unknown[][]
  try {
    values = statement.raw(true).all(parameters) as unknown[][]
  } finally {
    // Back to plain row objects: the statement is shared with Kysely's driver through the cache.
    statement.raw(false)
  }
  return values.map((value) => {
    const row: Record<string, unknown> = {}
    for (let index = 0; index < names.length; index++) row[names[index] as string] = value[index]
    return row
  })
}

/**
 * Compiled reads straight from better-sqlite3: synchronous, without Kysely's promise chain
 * and connection lock, which cost more than the read itself. Only while no transaction is
 * open on the connection: one that is (Kysely's transactions span awaits) would let the read
 * see its uncommitted writes, so then the read goes through Kysely, which runs it after the
 * transaction. Kysely's other queries run synchronously, so none is ever half done here.
 */
function readDirectly (sqlite: SQLite.Database, fallback: ReadRows): ReadRows {
  return <Row>(query: CompiledQuery<Row>) => {
    if (sqlite.inTransaction) return fallback(query)
    const statement = sqlite.prepare(query.sql)
    return (ROWS_BUILT_PER_COLUMN
      ? allAsObjects(statement, query.parameters)
      : statement.all(query.parameters)) as Row[]
  }
}

function openSqlite (path: string, onStatement: ((sql: string) => void) | undefined): SQLite.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new SQLite(path, onStatement === undefined ? {} : { verbose: (sql) => { onStatement(String(sql)) } })
  cacheStatements(sqlite)
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('synchronous = NORMAL')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('busy_timeout = 5000')
  // SQLite's lower() folds only A-Z, so searches (search.ts: lower(column) LIKE pattern) would
  // miss "Émile" for "émile"; PostgreSQL's folds all of Unicode. Replaced on this connection by
  // JavaScript's, the same folding the pattern gets. The trigram tables hold text lowered by it
  // (migrations/0010-collections-at-scale.ts): every writer of the database must be the service, and a Node.js whose
  // Unicode tables fold some character differently needs them rebuilt (docs/operations.md).
  sqlite.function('lower', { deterministic: true }, (value: unknown) => typeof value === 'string' ? value.toLowerCase() : value)
  return sqlite
}

/** The server cancels a statement running longer than this (an error the request answers 503). */
const STATEMENT_TIMEOUT_MS = 5000
/** A server or network that stopped answering cannot cancel anything: the client gives up a little later. */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 1000

/**
 * pg fails a query that outlived query_timeout but keeps its connection waiting for the
 * answer, and every later query on that connection would queue behind it. The client is ended
 * instead, at once (pg cuts a connection whose query is unanswered), so the pool discards it
 * when it comes back rather than handing it to the next query.
 */
function dropConnectionOnQueryTimeout (client: pg.PoolClient): void {
  const query = client.query
  client.query = function (this: pg.PoolClient, ...args: unknown[]) {
    const result: unknown = Reflect.apply(query, this, args)
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (error instanceof Error && error.message === QUERY_TIMEOUT_MESSAGE) void client.end()
      })
    }
    return result
  } as typeof client.query
}

/** pg is loaded at the first query, not at start, as oidc-provider is (docs/performance.md, "Start-up"). */
async function openPostgres (url: string, onError: (error: Error) => void): Promise<pg.Pool> {
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    // A database that is down or stopped answering must fail requests fast (503), not hang them.
    connectionTimeoutMillis: 3000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    types: {
      // timestamptz as ISO 8601 strings, the same shape SQLite stores.
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === TIMESTAMPTZ_OID
          ? (value: string) => new Date(value).toISOString()
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
    }
  })
  // A connection can drop (database restart) while its client idles in the pool or while it
  // is checked out between two queries of a transaction. The pool listens for that only while
  // the client idles, and an 'error' event nobody listens to crashes the process: each client
  // is listened to for its whole life instead, and the pool's second report of it is ignored.
  // A checked-out client that lost its connection fails its next query (503) and is discarded.
  pool.on('connect', (client) => {
    client.on('error', onError)
    dropConnectionOnQueryTimeout(client)
  })
  pool.on('error', () => {})
  return pool
}

export interface DatabaseObservers {
  /** A connection was lost (PostgreSQL): the pool replaces it. */
  onError?: (error: Error) => void
  /**
   * Told every statement the database runs, by either driver: how tests count the reads of a
   * request (docs/testing.md, "Counting statements").
   */
  onStatement?: (sql: string) => void
}

/** Chooses the driver from the URL's scheme (docs/operations.md, "PostgreSQL and Redis"). */
export function openDatabase (
  config: DatabaseConfig, { onError = () => {}, onStatement }: DatabaseObservers = {}
): Database {
  if (config.dialect === 'sqlite') {
    // better-sqlite3 reports each statement it runs, Kysely's and the direct reads alike.
    const sqlite = openSqlite(config.path, onStatement)
    const db = new Kysely<DatabaseSchema>({ dialect: new SqliteDialect({ database: sqlite }) })
    return { db, dialect: 'sqlite', readRows: readDirectly(sqlite, readThrough(db)), close: async () => await db.destroy() }
  }
  const db = new Kysely<DatabaseSchema>({
    dialect: new PostgresDialect({ pool: async () => await openPostgres(config.url, onError) }),
    ...(onStatement !== undefined && { log: (event) => { onStatement(event.query.sql) } })
  })
  return { db, dialect: 'postgres', readRows: readThrough(db), close: async () => await db.destroy() }
}
