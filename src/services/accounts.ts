import type { Role } from '../../schemas/rbac.js'
import { USER_FIELDS, type User, type UserChanges, type UserCreateBody } from '../../schemas/user.js'
import type { CursorCodec } from '../collection/cursor.js'
import { collectionPage } from '../collection/envelope.js'
import type { CollectionQueryInput } from '../collection/query.js'
import { Errors, validationFailed } from '../errors.js'
import { type PasswordPolicy, passwordPolicyProblems } from '../security/password-policy.js'
import type { PasswordHasher } from '../security/passwords.js'
import { effectiveRoles, permissionLacked, permissionsOf } from '../security/permissions.js'
import { type NewUser, normalizeEmail, type UserUpdate, type UsersRepository } from '../store/users.js'
import type { AuditChange, AuditTrail } from './audit-trail.js'
import { authorize } from './authorization.js'
import type { Caller, RequestContext } from './context.js'
import type { EmailVerificationService } from './email-verification.js'
import type { Notices } from './notices.js'
import type { SessionService } from './sessions.js'
import type { SignInGuard } from './sign-in-guard.js'

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
 * then hash and insert (the unique index settles concurrent registrations), through `insert`
 * when the insert is to be recorded with it.
 */
export async function createAccount (
  { users, passwords, passwordPolicy }: AccountDependencies,
  input: { email: string, name: string, password: string, roles: Role[], emailVerified: boolean },
  insert: (user: NewUser) => Promise<User> = async (user) => await users.create(user)
): Promise<User> {
  assertPasswordPolicy(input.password, passwordPolicy)
  if (await users.findByEmail(input.email) !== undefined) throw new Errors.EMAIL_ALREADY_REGISTERED()
  const passwordHash = await passwords.hash(input.password)
  return await insert({ email: input.email, name: input.name, passwordHash, roles: input.roles, emailVerified: input.emailVerified })
}

/**
 * ADMIN_EMAIL/ADMIN_PASSWORD at start-up: make sure the account exists and holds
 * `super_admin`. Idempotent, safe when several instances start at once, and an existing
 * account's password is left as it is. The operator chose the address: it counts as verified.
 */
export async function ensureSuperAdmin (deps: AccountDependencies, email: string, password: string): Promise<'created' | 'existing'> {
  const existing = await deps.users.findByEmail(email)
  if (existing === undefined) {
    try {
      // Bootstrap credentials are the operator's choice: length rules only.
      await createAccount({ ...deps, passwordPolicy: 'basic' }, { email, name: 'Administrator', password, roles: ['super_admin'], emailVerified: true })
      return 'created'
    } catch (error) {
      if (!(error instanceof Errors.EMAIL_ALREADY_REGISTERED)) throw error
    }
  }
  const user = existing ?? await deps.users.findByEmail(email)
  if (user === undefined) throw new Error('bootstrap admin vanished during start-up')
  await deps.users.addRole(user.id, 'super_admin')
  await deps.users.markEmailVerified(user.id, user.email)
  return 'existing'
}

export interface AccountServiceDependencies extends AccountDependencies {
  guard: SignInGuard
  sessions: SessionService
  audit: AuditTrail
  cursors: CursorCodec
  verification: EmailVerificationService
  notices: Notices
}

/** Users' accounts (docs/api.md, "Users"): registration, reading, changes, deletion. */
export class AccountService {
  constructor (private readonly deps: AccountServiceDependencies) {}

  async list (query: CollectionQueryInput) {
    const { users, cursors } = this.deps
    return await collectionPage(query, { ...USER_FIELDS, defaultSort: [{ field: 'created_at', descending: false }] }, cursors, async (request) => await users.list(request))
  }

  async get (id: string): Promise<User> {
    const user = await this.deps.users.findById(id)
    if (user === undefined) throw new Errors.NOT_FOUND('User')
    return user
  }

  /** Self-registration, with role `user`; a verification message goes to the address. */
  async register (context: RequestContext, body: UserCreateBody): Promise<User> {
    const { users, audit, verification } = this.deps
    // The account and its verification message are stored together: registration never half-fails.
    const user = await createAccount(this.deps, { ...body, roles: ['user'], emailVerified: false }, async (newUser) => {
      const { created } = await audit.recordChange(context, async (trx) => {
        const created = await users.create(newUser, trx)
        return { created, sent: await verification.storeOnChange(created, trx) }
      }, ({ created, sent }): AuditChange[] => [{ event: 'user.created', outcome: 'success', actorId: created.id, targetId: created.id, details: { email: created.email } }, ...sent])
      return created
    })
    verification.deliver()
    return user
  }

  /** The caller's account with its roles, permissions and second factors. */
  async describe (caller: Caller) {
    const { users } = this.deps
    const [user, principal, phone] = await Promise.all([users.findById(caller.id), users.findPrincipal(caller.id), users.findPhone(caller.id)])
    if (user === undefined || principal === undefined) throw new Errors.INVALID_TOKEN()
    const methods = [...(principal.mfaEnabled ? ['totp' as const] : []), ...principal.messageFactors]
    return {
      ...user,
      roles: [...effectiveRoles(caller.roles)],
      permissions: permissionsOf(caller.roles),
      mfa_enabled: methods.length > 0,
      mfa_methods: methods,
      phone: phone ?? null
    }
  }

  /**
   * Changes an account. A new password ends every session, and with them their access tokens,
   * and a notice goes out; a new address is unverified until a message sent to it is answered,
   * and the old address is told.
   */
  async update (context: RequestContext, caller: Caller, id: string, body: UserChanges): Promise<User> {
    const { users, sessions, audit, verification, notices } = this.deps
    if (!await this.#assertMayManage(caller, id)) throw new Errors.NOT_FOUND('User')
    const [before, phone] = await Promise.all([users.findById(id), users.findPhone(id)])
    const update = await this.#toUpdate(context, caller, id, body)
    // Giving the same address or number again changes nothing (and keeps it verified).
    if (update.email !== undefined && normalizeEmail(update.email) === before?.email) delete update.email
    if (update.phone !== undefined && update.phone === phone) delete update.phone
    if (before === undefined) throw new Errors.NOT_FOUND('User')
    const changed = Object.keys(body).filter((key) => key !== 'current_password')
    // Notices and the new address's verification message are stored with the change.
    // A new password ends every session in the same transaction.
    const { updated: user, sent, revokeAccess } = await audit.recordChange(context, async (trx) => {
      const updated = await users.update(id, update, trx)
      if (updated === undefined) return { updated, sent: [] }
      let revokeAccess: (() => Promise<void>) | undefined
      if (update.passwordHash !== undefined) {
        await notices.add(updated.email, 'password_changed', trx)
        revokeAccess = await sessions.endAllWithin(id, 'password_changed', trx)
      }
      if (updated.email === before.email) return { updated, sent: [], revokeAccess }
      await notices.add(before.email, 'email_changed', trx)
      return { updated, sent: await verification.storeOnChange(updated, trx), revokeAccess }
    }, ({ updated, sent }): AuditChange[] => updated === undefined
      ? []
      : [
          { event: 'user.updated', outcome: 'success', targetId: id, details: { changed } },
          ...(updated.email === before.email ? [] : [{ event: 'email.changed' as const, outcome: 'success' as const, targetId: id, details: { previous: before.email, current: updated.email } }]),
          ...sent
        ])
    if (user === undefined) throw new Errors.NOT_FOUND('User')
    if (update.passwordHash !== undefined || user.email !== before.email) notices.deliver()
    if (sent.length > 0) verification.deliver()
    await revokeAccess?.()
    return user
  }

  /** Deletes an account; deleting one that does not exist succeeds too. */
  async remove (context: RequestContext, caller: Caller, id: string): Promise<void> {
    await this.#assertMayManage(caller, id)
    await this.deps.audit.recordChange(context, async (trx) => await this.deps.users.delete(id, trx),
      (deleted) => [{ event: 'user.deleted', outcome: 'success', targetId: id, details: { existed: deleted } }])
  }

  /**
   * Changing or deleting another account needs every permission that account holds (the rule
   * for granting roles): an admin may not reset a super_admin's password. True when there is
   * such an account (false: it does not exist).
   */
  async #assertMayManage (caller: Caller, id: string): Promise<boolean> {
    const target = await this.deps.users.findPrincipal(id)
    if (target === undefined) return false
    if (caller.id === id) return true
    const missing = permissionLacked(authorize(caller, 'manage_users'), target.roles)
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
    return true
  }

  /**
   * Turns a validated body into repository changes. Changing one's own password needs
   * the current one; a `manage_users` caller may reset someone else's without it.
   */
  async #toUpdate (context: RequestContext, caller: Caller, id: string, body: UserChanges): Promise<UserUpdate> {
    const { users, passwords, passwordPolicy, guard } = this.deps
    const update: UserUpdate = {}
    if (body.email !== undefined) update.email = body.email
    if (body.name !== undefined) update.name = body.name
    if (body.phone !== undefined) update.phone = body.phone
    if (body.password === undefined) return update
    assertPasswordPolicy(body.password, passwordPolicy)
    if (caller.id === id) {
      const current = body.current_password
      if (current === undefined) {
        throw validationFailed([{ path: '/current_password', message: 'is required to change the password' }])
      }
      const stored = await users.findPasswordHash(id)
      // Held to the sign-in lockout, like a sign-in: a stolen access token must not guess the
      // password here. An account without a password (provider sign-in only) has nothing to guess.
      const matches = stored !== null && stored !== undefined &&
        await guard.checkSecret(context, id, 'auth.login_failed', { reason: 'wrong_current_password' }, async () => await passwords.verify(current, stored))
      if (!matches) throw validationFailed([{ path: '/current_password', message: 'does not match the current password' }])
    }
    update.passwordHash = await passwords.hash(body.password)
    return update
  }
}
