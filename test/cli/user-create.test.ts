import { existsSync } from 'node:fs'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { sqliteFile } from '../helpers/database.js'
import { type CommandRun, runCli } from '../helpers/process.js'

/** `npm run user:create -- ARGS` as an operator runs it, with `env` over the environment. */
async function userCreate (args: string[], env: Record<string, string>): Promise<CommandRun> {
  return await runCli('user-create', args, { ...process.env, ...env })
}

function emailsIn (path: string): unknown[] {
  const database = new SQLite(path, { readonly: true })
  try {
    return database.prepare('select email from users').all()
  } finally {
    database.close()
  }
}

t.test('user:create applies PASSWORD_POLICY as registration does: a refused password creates nothing', async (t) => {
  const { url, path } = sqliteFile(t)
  const short = await userCreate(['--email', 'short@example.com', '--password', 'short'], { DATABASE_URL: url })
  t.not(short.code, 0, 'exit code not 0')
  t.equal(short.stderr, '--password is refused by PASSWORD_POLICY=basic: it must be at least 8 characters long. No account was created.\n')
  t.equal(short.stdout, '')
  t.notOk(existsSync(path), 'not even the database was created')

  const weak = await userCreate(['--email', 'weak@example.com', '--password', 'password1'], { DATABASE_URL: url, PASSWORD_POLICY: 'strong' })
  t.not(weak.code, 0)
  t.equal(weak.stderr, '--password is refused by PASSWORD_POLICY=strong: it must be at least 12 characters long; it must contain an uppercase letter; it must contain a special character. No account was created.\n')

  const good = await userCreate(['--email', 'good@example.com', '--password', 'password1'], { DATABASE_URL: url })
  t.equal(good.code, 0, good.stderr)
  t.match(good.stdout, /^Created good@example\.com \(.+\) with roles user\n$/)
  t.same(emailsIn(path), [{ email: 'good@example.com' }], 'only the accepted account exists')
})

t.test('user:create without --password under PASSWORD_POLICY=strong prints a password the policy accepts', async (t) => {
  const { url, path } = sqliteFile(t)
  const run = await userCreate(['--email', 'ops@example.com', '--role', 'admin'], { DATABASE_URL: url, PASSWORD_POLICY: 'strong' })
  t.equal(run.code, 0, run.stderr)
  t.match(run.stdout, /^Created ops@example\.com \(.+\) with roles admin\nPassword: \S{12,}\n$/)
  t.same(emailsIn(path), [{ email: 'ops@example.com' }])
})

t.test('user:create --help: the usage on stdout, exit 0; bad usage: the reason and the usage, exit 2', async (t) => {
  const { url, path } = sqliteFile(t)
  const help = await userCreate(['--help'], { DATABASE_URL: url })
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage: npm run user:create -- --email EMAIL/)
  t.equal(help.stderr, '')
  const missing = await userCreate([], { DATABASE_URL: url })
  t.equal(missing.code, 2)
  t.match(missing.stderr, /^--email is required\n\nUsage: /)
  const unknown = await userCreate(['--email', 'a@example.com', '--role', 'anonymous'], { DATABASE_URL: url })
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /^Unknown roles: anonymous\n/)
  const option = await userCreate(['--emial', 'a@example.com'], { DATABASE_URL: url })
  t.equal(option.code, 2)
  t.notMatch(option.stderr, /\n\s+at /, 'an unknown option: no stack trace')
  t.notOk(existsSync(path), 'nothing was created')
})
