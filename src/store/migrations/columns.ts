import { type RawBuilder, sql } from 'kysely'
import type { Dialect } from '../types.js'

/**
 * The column type of timestamps: `timestamptz` on PostgreSQL, ISO 8601 text on SQLite. The
 * migrations' column types differ only where the dialects do.
 */
export function timestampType (dialect: Dialect): RawBuilder<unknown> {
  return dialect === 'postgres' ? sql`timestamptz` : sql`text`
}
