import pg from 'pg'
import { migrationsFingerprint, TEMPLATE_PREFIX } from './database.js'

/**
 * Runs before and after the suite (tap's `before`/`after`): removes the PostgreSQL databases a
 * test process left behind (each test drops its own at teardown, but a process stopped midway
 * cannot), and templates made by other migrations. Test databases are named `test_<pid>_…` by
 * test/helpers/database.ts; those of a process still running belong to another suite running at
 * the same time on this machine, and are left to it, with every template while it runs.
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
    // A test database of a process still running (`test_<pid>_…`; templates name no process).
    const live = (name: string) => {
      const pid = Number(/^test_(\d+)_/.exec(name)?.[1])
      return Number.isInteger(pid) && running(pid)
    }
    // Another suite running now (this suite's databases are not made yet, or gone) may be
    // copying its template, of other migrations: every template is left to it then.
    const anotherSuite = rows.some(({ name }) => live(name))
    for (const { name } of rows) {
      if (name.startsWith(TEMPLATE_PREFIX)) {
        if (name === current || anotherSuite) continue
        await client.query(`alter database "${name}" with is_template false`)
      } else {
        if (!/^test_\d+_/.test(name) || live(name)) continue
      }
      await client.query(`drop database if exists "${name}" with (force)`)
    }
  } finally {
    await client.end()
  }
}
