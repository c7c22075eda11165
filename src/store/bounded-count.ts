import type { SelectQueryBuilder } from 'kysely'
import type { DatabaseSchema, Db } from './types.js'

/**
 * How many rows `rows` selects, counting no further than `cap`: a count that reached it means
 * "at least". An overview's counts (docs/api.md, "Overview") then read at most `cap` entries of
 * an index, however many rows match.
 */
export async function countUpTo<Table extends keyof DatabaseSchema> (
  db: Db, rows: SelectQueryBuilder<DatabaseSchema, Table, object>, cap: number
): Promise<number> {
  const row = await db.selectFrom(rows.limit(cap).as('counted')).select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}

/**
 * How many different `value`s the first `cap` rows of `rows` hold: bounded as countUpTo is, so
 * a count of `cap` means at least that many, or more rows than the cap of fewer values.
 */
export async function countValuesUpTo<Table extends keyof DatabaseSchema> (
  db: Db, rows: SelectQueryBuilder<DatabaseSchema, Table, { value: string }>, cap: number
): Promise<number> {
  const row = await db.selectFrom(rows.limit(cap).as('counted')).select((eb) => eb.fn.count('value').distinct().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}
