import type { Role } from '../../schemas/rbac.js'
import type { User } from '../../schemas/user.js'
import { Errors, validationFailed } from '../errors.js'
import { type PasswordPolicy, passwordPolicyProblems } from '../security/password-policy.js'
import type { PasswordHasher } from '../security/passwords.js'
import type { UsersRepository } from '../store/users.js'

export interface AccountDependencies {
  users: UsersRepository
  passwords: PasswordHasher
  passwordPolicy: PasswordPolicy
}

/** Throws VALIDATION_FAILED with one detail per unmet password rule. */
export function assertPasswordPolicy (password: string, policy: PasswordPolicy, path = '/password'): void {
  const problems = passwordPolicyProblems(password, policy)
  if (problems.length > 0) throw validationFailed(problems.map((message) => ({ path, message })))
}

/**
 * Registers an account: policy check, a taken address refused before paying for a hash,
 * then hash and insert (the unique index settles concurrent registrations).
 */
export async function createAccount (
  { users, passwords, passwordPolicy }: AccountDependencies,
  input: { email: string, name: string, password: string, roles: Role[] }
): Promise<User> {
  assertPasswordPolicy(input.password, passwordPolicy)
  if (await users.findByEmail(input.email) !== undefined) throw new Errors.EMAIL_ALREADY_REGISTERED()
  const passwordHash = await passwords.hash(input.password)
  return await users.create({ email: input.email, name: input.name, passwordHash, roles: input.roles })
}

/**
 * CONTRACT section 1 ADMIN_EMAIL/ADMIN_PASSWORD: make sure the account exists and holds
 * `super_admin`. Idempotent, safe when several instances start at once, and an existing
 * account's password is left as it is.
 */
export async function ensureSuperAdmin (deps: AccountDependencies, email: string, password: string): Promise<'created' | 'existing'> {
  const existing = await deps.users.findByEmail(email)
  if (existing === undefined) {
    try {
      // Bootstrap credentials are the operator's choice: length rules only (spec 4.1).
      await createAccount({ ...deps, passwordPolicy: 'basic' }, { email, name: 'Administrator', password, roles: ['super_admin'] })
      return 'created'
    } catch (error) {
      if (!(error instanceof Errors.EMAIL_ALREADY_REGISTERED)) throw error
    }
  }
  const user = existing ?? await deps.users.findByEmail(email)
  if (user === undefined) throw new Error('bootstrap admin vanished during start-up')
  await deps.users.addRole(user.id, 'super_admin')
  return 'existing'
}
