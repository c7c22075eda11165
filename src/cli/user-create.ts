import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { ASSIGNABLE_ROLES, type Role } from '../../schemas/rbac.js'
import { loadConfig } from '../config/index.js'
import { type PasswordPolicy, passwordPolicyProblems } from '../security/password-policy.js'
import { PasswordHasher } from '../security/passwords.js'
import { createAccount } from '../services/accounts/accounts.js'
import { CursorCodec } from '../collection/cursor.js'
import { openDatabase } from '../store/database.js'
import { migrateToLatest } from '../store/migrations/index.js'
import { UsersRepository } from '../store/users.js'

const USAGE = `Usage: npm run user:create -- --email EMAIL [--name NAME] [--password PASSWORD] [--role ROLE]...

Creates an account in DATABASE_URL (migrating it first), its address counted as verified.

  --email EMAIL        the account's address (required)
  --name NAME          its display name (default: the part of EMAIL before @)
  --password PASSWORD  its password, which must meet PASSWORD_POLICY as at registration
                       (default: a random one, printed once)
  --role ROLE          one of ${ASSIGNABLE_ROLES.join(', ')}; repeated, or comma-separated
                       (default: user)
  --help               this text
`

/** Bad usage: the reason and the usage on stderr, exit 2 (as the other tasks). */
function failUsage (reason: string): never {
  process.stderr.write(`${reason}\n\n${USAGE}`)
  process.exit(2)
}

function options (): { email: string, name?: string, password?: string, roles: Role[] } {
  let values
  try {
    values = parseArgs({
      options: {
        email: { type: 'string' },
        name: { type: 'string' },
        password: { type: 'string' },
        role: { type: 'string', multiple: true },
        help: { type: 'boolean', short: 'h' }
      }
    }).values
  } catch (error) {
    // An unknown option or a missing value: the reason and the usage, not a stack trace.
    failUsage((error as Error).message)
  }
  if (values.help === true) {
    process.stdout.write(USAGE)
    process.exit(0)
  }
  const roles = (values.role ?? ['user']).flatMap((role) => role.split(','))
  const unknown = roles.filter((role) => !(ASSIGNABLE_ROLES as readonly string[]).includes(role))
  if (unknown.length > 0) failUsage(`Unknown roles: ${unknown.join(', ')}`)
  if (values.email === undefined) failUsage('--email is required')
  return { email: values.email, name: values.name, password: values.password, roles: roles as Role[] }
}

/** A random password the policy accepts: base64url may lack a class `strong` asks for, so it is drawn again. */
function randomPassword (policy: PasswordPolicy): string {
  for (;;) {
    const password = randomBytes(15).toString('base64url')
    if (passwordPolicyProblems(password, policy).length === 0) return password
  }
}

/** `npm run user:create`: creates an account in DATABASE_URL, e.g. a first admin. */
async function main (): Promise<void> {
  const { email, name, password: given, roles } = options()
  const config = loadConfig()
  // Refused before the database is opened: a refused password leaves nothing behind. The
  // service applies the same policy again (createAccount), as it does for a registration.
  const problems = given === undefined ? [] : passwordPolicyProblems(given, config.passwordPolicy)
  if (problems.length > 0) throw new Error(`--password is refused by PASSWORD_POLICY=${config.passwordPolicy}: it ${problems.join('; it ')}. No account was created.`)
  const password = given ?? randomPassword(config.passwordPolicy)
  const database = openDatabase(config.database)
  try {
    await migrateToLatest(database.db, database.dialect)
    const user = await createAccount({
      users: new UsersRepository(database.db, database.readRows, {
        ...database,
        cursors: new CursorCodec(config.jwtSecret),
        read: database.readRows,
        countLimit: config.collectionCountLimit
      }),
      passwords: new PasswordHasher({ concurrency: availableParallelism(), queueLimit: 1 }),
      passwordPolicy: config.passwordPolicy
    }, { email, name: name ?? email.split('@')[0] ?? 'User', password, roles, emailVerified: true })
    process.stdout.write(`Created ${user.email} (${user.id}) with roles ${roles.join(', ')}\n`)
    if (given === undefined) process.stdout.write(`Password: ${password}\n`)
  } finally {
    await database.close()
  }
}

try {
  await main()
} catch (error) {
  const details = (error as { details?: Array<{ path: string, message: string }> }).details
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`${message}${details === undefined ? '' : `: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`}\n`)
  process.exitCode = 1
}
