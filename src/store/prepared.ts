import type { Compilable } from 'kysely'
import type { Db } from './types.js'

/**
 * A query built and compiled once, then run with fresh parameter values. Building and
 * compiling a Kysely query costs more than running a small indexed one, so the reads on
 * every request's path are prepared when the repository is made. The parameters are passed
 * in the order their placeholders appear in the query.
 */
export function prepare<Row> (db: Db, query: Compilable<Row>): (...parameters: unknown[]) => Promise<Row[]> {
  const compiled = query.compile()
  const expected = compiled.parameters.length
  return async (...parameters) => {
    if (parameters.length !== expected) throw new Error(`prepared query takes ${expected} parameters, got ${parameters.length}`)
    return (await db.executeQuery<Row>({ ...compiled, parameters })).rows
  }
}
