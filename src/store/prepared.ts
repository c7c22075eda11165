import type { Compilable, CompiledQuery } from 'kysely'
import type { Db } from './types.js'

/**
 * Runs a compiled read and gives its rows: at once where the driver can (SQLite, see
 * database.ts), as a promise otherwise.
 */
export type ReadRows = <Row>(query: CompiledQuery<Row>) => Row[] | Promise<Row[]>

/** Reads through Kysely's executor: the way for every dialect, and the only one for PostgreSQL. */
export function readThrough (db: Db): ReadRows {
  return async <Row>(query: CompiledQuery<Row>) => (await db.executeQuery<Row>(query)).rows
}

/**
 * A query built and compiled once, then run with fresh parameter values. Building and
 * compiling a Kysely query costs more than running a small indexed one, so the reads on
 * every request's path are prepared when the repository is made. The parameters are passed
 * in the order their placeholders appear in the query.
 */
export function prepare<Row> (
  read: ReadRows,
  query: Compilable<Row>
): (...parameters: unknown[]) => Row[] | Promise<Row[]> {
  const compiled = query.compile()
  const expected = compiled.parameters.length
  return (...parameters) => {
    if (parameters.length !== expected) throw new Error(`prepared query takes ${expected} parameters, got ${parameters.length}`)
    return read({ ...compiled, parameters })
  }
}

/** A bound value's place in a query compiled once: replaced by its value at each run (bindNamed). */
export class Placeholder {
  constructor (readonly name: string) {}
}

/**
 * The query compiled with Placeholders, each replaced by its value in `values`; a name without
 * one (undefined is a value) is a mistake, not a NULL.
 */
export function bindNamed<Row> (query: CompiledQuery<Row>, values: Record<string, unknown>): CompiledQuery<Row> {
  return {
    ...query,
    parameters: query.parameters.map((parameter) => {
      if (!(parameter instanceof Placeholder)) return parameter
      if (!(parameter.name in values)) throw new Error(`no value for the placeholder ${parameter.name}`)
      return values[parameter.name]
    })
  }
}
