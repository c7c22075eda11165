import { type Kysely, sql } from 'kysely'
import type { Dialect } from '../types.js'
import { trigramOperators } from './columns.js'

export const name = '0022_organizations_search_index'

export async function up (db: Kysely<any>, dialect: Dialect): Promise<void> {
  // A search of organizations by name or slug: on PostgreSQL trigram indexes serve it, as the
  // users' (migration 0010) serve theirs. Without them, once the table's statistics are fresh,
  // the planner answers a member's search by reading every organization rather than their
  // memberships (docs/performance.md, "Selective searches on PostgreSQL, fresh and after VACUUM").
  if (dialect !== 'postgres') return
  const operators = await trigramOperators(db)
  await sql`create index organizations_name_trigram on organizations using gin (lower(name) ${operators})`.execute(db)
  await sql`create index organizations_slug_trigram on organizations using gin (lower(slug) ${operators})`.execute(db)
}
