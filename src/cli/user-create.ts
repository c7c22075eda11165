import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { parseArgs } from 'node:util'
import { ROLES, type Role } from '../../schemas/rbac.js'
import { ConfigError, loadConfig } from '../config.js'
import { PasswordHasher } from '../security/passwords.js'
import { createAccount } from '../services/accounts.js'
import { CursorCodec } from '../collection/cursor.js'
import { openDatabase } from '../store/database.js'
import { migrateToLatest } from '../store/migrations.js'
import { UsersRepository } from '../store/users.js'

const USAGE = `Usage: npm run user:create -- --email EMAIL [--name NAME] [--password PASSWORD] [--role ROLE]...
Roles: ${ROLES.join(', ')}. Without --password a random one is generated and printed once.`

/** `npm run user:create`: creates an account in DATABASE_URL, e.g. a first admin. */
async function main (): Promise<void> {
  const { values } = parseArgs({
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      password: { type: 'string' },
      role: { type: 'string', multiple: true }
    }
  })
  const roles = (values.role ?? ['user']).flatMap((role) => role.split(','))
  const unknown = roles.filter((role) => !(ROLES as readonly string[]).includes(role))
  if (values.email === undefined || unknown.length > 0) {
    throw new Error(unknown.length > 0 ? `Unknown roles: ${unknown.join(', ')}\n${USAGE}` : USAGE)
  }
  const config = loadConfig()
  const database = openDatabase(config.database)
  try {
    await migrateToLatest(database.db, database.dialect)
    const password = values.password ?? randomBytes(12).toString('base64url')
    const user = await createAccount({
      users: new UsersRepository(database.db, database.readRows, { ...database, cursors: new CursorCodec(config.jwtSecret), read: database.readRows }),
      passwords: new PasswordHasher({ concurrency: availableParallelism(), queueLimit: 1 }),
      passwordPolicy: config.passwordPolicy
    }, { email: values.email, name: values.name ?? values.email.split('@')[0] ?? 'User', password, roles: roles as Role[], emailVerified: true })
    process.stdout.write(`Created ${user.email} (${user.id}) with roles ${roles.join(', ')}\n`)
    if (values.password === undefined) process.stdout.write(`Password: ${password}\n`)
  } finally {
    await database.close()
  }
}

try {
  await main()
} catch (error) {
  const details = (error as { details?: Array<{ path: string, message: string }> }).details
  const message = error instanceof ConfigError || error instanceof Error ? error.message : String(error)
  process.stderr.write(`${message}${details === undefined ? '' : `: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`}\n`)
  process.exitCode = 1
}
