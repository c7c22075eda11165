import pg from 'pg'

/**
 * Runs before and after the suite (tap's `before`/`after`): removes the PostgreSQL schemas
 * the tests made. Tests do not drop their own: a schema dropped while another test file
 * migrates races Kysely's catalog introspection ("schema … does not exist").
 */
const url = process.env.TEST_DATABASE_URL
if (url !== undefined && url !== '') {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ name: string }>("select nspname as name from pg_namespace where nspname like 'test\\_%'")
    for (const { name } of rows) await client.query(`drop schema "${name}" cascade`)
  } finally {
    await client.end()
  }
}
