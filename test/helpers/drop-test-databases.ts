import pg from 'pg'
import { migrationsFingerprint, TEMPLATE_PREFIX } from './database.js'

/**
 * Runs before and after the suite (tap's `before`/`after`): removes the PostgreSQL databases a
 * test process left behind (each test drops its own at teardown, but a process stopped midway
 * cannot), and templates made by other migrations. Test databases are named `test_<pid>_…` by
 * test/helpers/database.ts; those of a process still running belong to another suite running at
 * the same time on this machine, and are left to it.
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
    const current = `${TEMPLATE_PREFIX}${migrationsFingerprint()}`
    const { rows } = await client.query<{ name: string }>("select datname as name from pg_database where datname like 'test\\_%'")
    for (const { name } of rows) {
      if (name.startsWith(TEMPLATE_PREFIX)) {
        if (name === current) continue
        await client.query(`alter database "${name}" with is_template false`)
      } else {
        const pid = Number(/^test_(\d+)_/.exec(name)?.[1])
        if (!Number.isInteger(pid) || running(pid)) continue
      }
      await client.query(`drop database if exists "${name}" with (force)`)
    }
  } finally {
    await client.end()
  }
}
