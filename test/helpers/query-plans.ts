/**
 * What the query-plan tests of test/store/ share: rows seeded in bulk, statements run and rolled
 * back, and the check that the queries an operation ran read its tables through an index.
 */
import type { Test } from 'tap'
import type { CollectionRequest } from '../../src/collection/query.js'
import type { Database } from '../../src/store/database.js'
import type { DatabaseSchema, Db } from '../../src/store/types.js'
import { queryPlan } from './database.js'
import type { recordingRepositories } from './organizations.js'

class RolledBack extends Error {}

/** Runs `work` in a transaction of `db` that is rolled back: its statements run, and change nothing. */
export async function rolledBack (db: Db, work: (trx: Db) => Promise<unknown>): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await work(trx)
    throw new RolledBack()
  }).catch((error: unknown) => {
    if (!(error instanceof RolledBack)) throw error
  })
}

/** Inserts `rows` into `table` 400 at a time, well under both dialects' bound-parameter limits. */
export async function insertChunked<Table extends keyof DatabaseSchema> (
  db: Db, table: Table, rows: Array<Record<string, unknown>>
): Promise<void> {
  for (let start = 0; start < rows.length; start += 400) {
    await db.insertInto(table).values(rows.slice(start, start + 400) as never).execute()
  }
}

/**
 * The plan checks over `watched`, the tables whose rows grow with use: a query may not read one
 * of them whole.
 */
export function planChecker (watched: readonly string[]) {
  /** The scans in `plan` reading a watched table (or one of its indexes) whole; `query` names the tables' aliases. */
  function fullScans (plan: string, query: string, dialect: Database['dialect']): string[] {
    const names = new Set<string>(watched)
    for (const [, table, alias] of query.matchAll(/"(\w+)" as "(\w+)"/g)) {
      if (watched.includes(table ?? '') && alias !== undefined) names.add(alias)
    }
    const lines = plan.split('\n')
    if (dialect === 'sqlite') {
      // SEARCH reads a range of an index; SCAN reads the table (or an index) whole.
      return lines.filter((line) => [...names].some((name) => new RegExp(`^\\W*SCAN ${name}\\b`).test(line)))
    }
    // A plan node is its line and the property lines under it; an index scan without an Index Cond
    // reads the index whole.
    const nodes: string[][] = []
    for (const line of lines) {
      if (nodes.length === 0 || line.trim().startsWith('->')) nodes.push([line])
      else nodes.at(-1)?.push(line)
    }
    const tables = [...watched].join('|')
    return nodes.filter((node) => {
      const head = node[0] ?? ''
      if (new RegExp(`Seq Scan on (${tables})\\b`).test(head)) return true
      const indexScan = new RegExp(`(Index Scan|Index Only Scan|Bitmap Index Scan)( Backward)? (using|on) (${tables})_`).test(head)
      return indexScan && !node.some((line) => line.includes('Index Cond:'))
    }).map((node) => node.join('\n'))
  }

  /**
   * Reads the plans of the queries `operation` ran on a watched table: none may read one whole, and
   * together they use `index`. Answers the plans, each after its SQL.
   */
  async function checkPlans (
    t: Test,
    database: Database,
    recorded: Pick<ReturnType<typeof recordingRepositories>, 'ran'>,
    table: string,
    operation: () => Promise<unknown>,
    index: RegExp
  ): Promise<Array<{ sql: string, plan: string }>> {
    recorded.ran.length = 0
    await operation()
    const plans: Array<{ sql: string, plan: string }> = []
    const seen = new Set<string>()
    for (const query of recorded.ran) {
      if (seen.has(query.sql) || !watched.some((name) => query.sql.includes(`"${name}"`))) continue
      seen.add(query.sql)
      const plan = await queryPlan(database, table, { compile: () => query })
      plans.push({ sql: query.sql, plan })
      t.same(fullScans(plan, query.sql, database.dialect), [], `${query.sql}\n${plan}`)
    }
    t.ok(plans.length > 0, 'the operation ran its queries')
    t.match(plans.map(({ plan }) => plan).join('\n'), index, `uses ${String(index)}`)
    return plans
  }

  return { fullScans, checkPlans }
}

/** A collection request for the repositories: the first 20 rows, oldest first, unless `overrides` says otherwise. */
export const page = (overrides: Partial<CollectionRequest> = {}): CollectionRequest => ({
  scope: 'test',
  sort: [{ field: 'created_at', descending: false }, { field: 'id', descending: false }],
  fields: null,
  filters: {},
  pagination: { kind: 'offset', page: 1, limit: 20 },
  ...overrides
})

/** The plan of the page query itself (the one with ORDER BY) sorts nothing: the index gives the order. */
export function sortsNothing (t: Test, plans: Array<{ sql: string, plan: string }>, dialect: Database['dialect']): void {
  const ordered = plans.filter((plan) => plan.sql.includes('order by'))
  t.ok(ordered.length > 0, 'a page query')
  for (const { sql: text, plan } of ordered) {
    t.notMatch(plan, dialect === 'sqlite' ? /USE TEMP B-TREE FOR ORDER BY/ : /\bSort\b/, `in the index's order: ${text}\n${plan}`)
  }
}
