import { sql } from 'kysely'
import type { Db, Dialect } from './types.js'

/**
 * What the statements generate rows with, in each dialect: the `number`th id of a kind (its
 * prefix), timestamps one second apart from 2025-01-01, and the numbers 0 to count - 1.
 */
function generators (dialect: Dialect, count: number) {
  const postgres = dialect === 'postgres'
  const id = (prefix: string, number = 'i') => postgres
    ? `'${prefix}-0000-7000-8000-' || lpad((${number})::text, 12, '0')`
    : `'${prefix}-0000-7000-8000-' || printf('%012d', ${number})`
  const at = postgres
    ? "timestamptz '2025-01-01T00:00:00Z' + i * interval '1 second'"
    : "strftime('%Y-%m-%dT%H:%M:%fZ', 1735689600 + i, 'unixepoch')"
  const sequence = `with recursive seq(i) as (select 0 union all select i + 1 from seq where i < ${Math.trunc(count) - 1})`
  return { postgres, id, at, sequence }
}

/**
 * Fills an empty, migrated database with `count` users, `count` posts (one each, unless
 * `posts` is false: the console shows none) and `count` audit entries (actors: the first 1,000
 * users), generated inside the database (one statement per table), for the scale benchmark
 * (bench/scale.ts). The triggers of migration 0010 run as for any insert, so the
 * maintained counts and search indexes cover the rows. Selective terms for the searches and
 * filters: one name and one post title in 1,000 hold "zebrafish", one in 10 "Jones" and "dogs";
 * one audit entry in 10 is `auth.logout`, each actor's one in 1,000.
 */
export async function bulkSeed (db: Db, dialect: Dialect, count: number, { posts = true } = {}): Promise<void> {
  const { postgres, id, at, sequence } = generators(dialect, count)
  // One transaction; on PostgreSQL without the service's statement timeout, which a million rows exceed.
  await db.transaction().execute(async (trx) => {
    if (postgres) await sql`set local statement_timeout = 0`.execute(trx)
    await sql.raw(`${sequence} insert into users (id, email, name, email_verified, created_at, updated_at)
      select ${id('00000000')}, 'user' || i || '@example.com',
        'User ' || i || case when i % 1000 = 7 then ' Zebrafish' when i % 10 = 3 then ' Jones' else ' Smith' end, 1, ${at}, ${at} from seq`).execute(trx)
    if (posts) {
      await sql.raw(`${sequence} insert into posts (id, author_id, title, body, status, created_at, updated_at)
        select ${id('00000001')}, ${id('00000000')}, 'Post ' || i || case when i % 1000 = 7 then ' on zebrafish' when i % 10 = 3 then ' on dogs' else ' on cats' end,
          'Body of post ' || i || ': lorem ipsum dolor sit amet', case i % 3 when 0 then 'published' when 1 then 'draft' else 'archived' end,
          ${at}, ${at} from seq`).execute(trx)
    }
    await sql.raw(`${sequence} insert into audit_logs (id, event, actor_id, target_id, ip, user_agent, outcome, details, created_at)
      select ${id('00000002')},
        case when i % 10 = 3 then 'auth.logout' when i % 3 = 0 then 'auth.login' when i % 3 = 1 then 'user.created' else 'user.updated' end,
        ${id('00000000', 'i % 1000')},
        null, '127.0.0.1', 'bench', 'success', '{}', ${at} from seq`).execute(trx)
    for (const table of ['users', 'posts', 'audit_logs']) await sql`analyze ${sql.table(table)}`.execute(trx)
  })
}

/**
 * Adds `count` organizations (ids `00000003-…`, slugs `org-<i>`, one name in 1,000 holding
 * "Zebrafish") to a database bulkSeed filled with at least `count` users: the first
 * organization has the first `count` users as members (user 0 its owner), joined one second
 * apart; each other organization `i` has user `i` as its owner.
 */
export async function bulkSeedOrganizations (db: Db, dialect: Dialect, count: number): Promise<void> {
  const { postgres, id, at, sequence } = generators(dialect, count)
  await db.transaction().execute(async (trx) => {
    if (postgres) await sql`set local statement_timeout = 0`.execute(trx)
    await sql.raw(`${sequence} insert into organizations (id, name, slug, created_at, updated_at)
      select ${id('00000003')}, 'Organization ' || i || case when i % 1000 = 7 then ' Zebrafish' else ' Acme' end,
        'org-' || i, ${at}, ${at} from seq`).execute(trx)
    await sql.raw(`${sequence} insert into organization_members (organization_id, user_id, role, created_at)
      select ${id('00000003', '0')}, ${id('00000000')}, case when i = 0 then 'owner' else 'member' end, ${at} from seq
      union all select ${id('00000003')}, ${id('00000000')}, 'owner', ${at} from seq where i > 0`).execute(trx)
    for (const table of ['organizations', 'organization_members']) await sql`analyze ${sql.table(table)}`.execute(trx)
  })
}
