import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Dialect } from '../types.js'

/**
 * The column type of timestamps: `timestamptz` on PostgreSQL, ISO 8601 text on SQLite. The
 * migrations' column types differ only where the dialects do.
 */
export function timestampType (dialect: Dialect): RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`timestamptz` : sql`text`
}

/**
 * PostgreSQL: pg_trgm's operator class for GIN indexes on lower(column), named in the schema
 * the extension lives in (migration 0010 creates it in public).
 */
export async function trigramOperators (db: Kysely<any>): Promise<RawBuilder<unknown>> {
  const { rows } = await sql<{ schema: string }>`select n.nspname as schema from pg_extension e
    join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'`.execute(db)
  return sql.raw(`${sql.id(rows[0]?.schema ?? 'public').compile(db).sql}.gin_trgm_ops`)
}
