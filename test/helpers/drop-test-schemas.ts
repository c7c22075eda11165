import pg from 'pg'

/**
 * Runs before and after the suite (tap's `before`/`after`): removes the PostgreSQL schemas
 * the tests made. Tests do not drop their own: a schema dropped while another test file
 * migrates races Kysely's catalog introspection ("schema … does not exist"). Schemas are
 * named `test_<pid>_…` by test/helpers/database.ts; those of a process still running belong to another
 * suite running at the same time on this machine, and are left to it.
 */
function running (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

const url = process.env.TEST_DATABASE_URL
if (url !== undefined && url !== '') {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ name: string }>("select nspname as name from pg_namespace where nspname like 'test\\_%'")
    for (const { name } of rows) {
      const pid = Number(/^test_(\d+)_/.exec(name)?.[1])
      if (Number.isInteger(pid) && running(pid)) continue
      await client.query(`drop schema if exists "${name}" cascade`)
    }
  } finally {
    await client.end()
  }
}
