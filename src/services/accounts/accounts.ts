import type { Role } from '../../../schemas/rbac.js'
import { USER_FIELDS, type User, type UserChanges, type UserCreateBody } from '../../../schemas/user.js'
import type { CursorCodec } from '../../collection/cursor.js'
import { collectionPage } from '../../collection/envelope.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import { Errors, rethrowServiceError, validationFailed } from '../../errors.js'
import { assertPasswordPolicy, type PasswordPolicy } from '../../security/password-policy.js'
import type { PasswordHasher } from '../../security/passwords.js'
import { effectiveRoles, permissionsOf } from '../../security/permissions.js'
import type { AccountErasureRepository } from '../../store/account-erasure.js'
import type { Db } from '../../store/types.js'
import { type NewUser, normalizeEmail, type UserUpdate, type UsersRepository } from '../../store/users.js'
import type { AccountClaims, InlineProof, ReauthenticationService } from '../sign-in/index.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import type { BreachedPasswords } from './breached-passwords.js'
import { type Caller, callerOf, type RequestContext } from '../context.js'
import type { EmailVerificationService } from './email-verification.js'
import type { Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import { assertMayManage, managedAccount } from './management.js'

export interface AccountDependencies {
  users: UsersRepository
  passwords: PasswordHasher
  passwordPolicy: PasswordPolicy
}

/**
 * Registers an account: policy check, then `screen` (a password the policy refuses is not
 * sent anywhere), a taken address refused before paying for a hash, then hash and insert (the
 * unique index settles concurrent registrations), through `insert` when the insert is to be
 * recorded with it.
 */
export async function createAccount (
  { users, passwords, passwordPolicy }: AccountDependencies,
  input: { email: string, name: string, password: string, roles: Role[], emailVerified: boolean },
  {
    screen = async () => {},
    insert = async (user) => await users.create(user)
  }: { screen?: (password: string) => Promise<void>, insert?: (user: NewUser) => Promise<User> } = {}
): Promise<User> {
  assertPasswordPolicy(input.password, passwordPolicy)
  await screen(input.password)
  if (await users.findByEmail(input.email) !== undefined) throw new Errors.EMAIL_ALREADY_REGISTERED()
  const passwordHash = await passwords.hash(input.password)
  const { email, name, roles, emailVerified } = input
  // The store's conflict (an address taken meanwhile) becomes EMAIL_ALREADY_REGISTERED, whichever `insert`.
  return await insert({ email, name, passwordHash, roles, emailVerified }).catch(rethrowServiceError)
}

/**
 * Erases an account on `trx`: what it left elsewhere loses its personal data, then its row
 * goes with everything attached to it. False when there was no such account.
 */
export async function eraseAccount (
  deps: { users: UsersRepository, erasure: AccountErasureRepository },
  user: { id: string, email: string },
  trx: Db
): Promise<boolean> {
  if (!await deps.erasure.eraseTraces(user, trx)) return false
  return await deps.users.delete(user.id, trx)
}

/**
 * An account as `GET /auth/me` shows it, with its principal (`/auth/me` and the account export,
 * docs/api.md); undefined when it does not exist.
 */
export async function describeAccount (users: UsersRepository, id: string) {
  const [user, principal, phone] = await Promise.all([users.findById(id), users.findPrincipal(id), users.findPhone(id)])
  if (user === undefined || principal === undefined) return undefined
  const methods = [...(principal.mfaEnabled ? ['totp' as const] : []), ...principal.messageFactors]
  const account = {
    ...user,
    roles: [...effectiveRoles(principal.roles)],
    permissions: permissionsOf(principal.roles),
    mfa_enabled: methods.length > 0,
    mfa_methods: methods,
    phone: phone ?? null
  }
  return { account, principal }
}

export interface AccountServiceDependencies extends AccountDependencies {
  breachedPasswords: BreachedPasswords
  sessions: SessionService
  claims: AccountClaims
  reauthentication: ReauthenticationService
  audit: AuditTrail
  cursors: CursorCodec
  verification: EmailVerificationService
  notices: Notices
  erasure: AccountErasureRepository
}

/** Users' accounts (docs/api.md, "Users"): registration, reading, changes, deletion. */
export class AccountService {
  constructor (private readonly deps: AccountServiceDependencies) {}

  async list (query: CollectionQueryInput) {
    const { users, cursors } = this.deps
    return await collectionPage(query, { ...USER_FIELDS, defaultSort: [{ field: 'created_at', descending: false }], scope: 'users' }, cursors, async (request) => await users.list(request))
  }

  /** The account of an address, as any spelling of it names it (the console's search by address); null when none. */
  async findByAddress (email: string): Promise<User | null> {
    const account = await this.deps.users.findByEmail(normalizeEmail(email))
    return account === undefined ? null : await this.get(account.id)
  }

  async get (id: string): Promise<User> {
    const user = await this.deps.users.findById(id)
    if (user === undefined) throw new Errors.NOT_FOUND('User')
    return user
  }

  /** Self-registration, with role `user`; a verification message goes to the address. */
  async register (context: RequestContext, body: UserCreateBody): Promise<User> {
    const { users, audit, verification, breachedPasswords } = this.deps
    const user = await createAccount(this.deps, { ...body, roles: ['user'], emailVerified: false }, {
      screen: async (password) => { await breachedPasswords.check(context, password, 'registration') },
      // The account and its verification message are stored together: registration never half-fails.
      insert: async (newUser) => {
        const { created } = await audit.recordChange(context, async (trx) => {
          const created = await users.create(newUser, trx)
          return { created, sent: await verification.storeOnChange(created, trx) }
        }, ({ created, sent }): AuditChange[] => [{ event: 'user.created', outcome: 'success', actorId: created.id, targetId: created.id, details: { email: created.email } }, ...sent])
        return created
      }
    })
    verification.deliver()
    return user
  }

  /**
   * ADMIN_EMAIL/ADMIN_PASSWORD at start-up: make sure the account exists and holds
   * `super_admin`. Idempotent, and safe when several instances start at once. The operator
   * chose the address: it counts as proved. An existing account the operator's address had
   * never proved (unclaimed: anyone could have registered it) is claimed for the operator, as
   * a reset would claim it (docs/security.md, "Account claiming"): its password becomes
   * ADMIN_PASSWORD and whatever was attached to it is removed, before it is promoted. A
   * claimed account keeps its password.
   */
  async ensureSuperAdmin (context: RequestContext, email: string, password: string): Promise<'created' | 'existing' | 'claimed'> {
    const { users, passwords, claims, audit } = this.deps
    const existing = await users.findByEmail(email)
    if (existing === undefined) {
      try {
        await createAccount(this.deps, { email, name: 'Administrator', password, roles: ['super_admin'], emailVerified: true })
        return 'created'
      } catch (error) {
        if (!(error instanceof Errors.EMAIL_ALREADY_REGISTERED)) throw error
      }
    }
    const user = existing ?? await users.findByEmail(email)
    if (user === undefined) throw new Error('bootstrap admin vanished during start-up')
    const principal = await users.findPrincipal(user.id)
    const claimed = principal?.claimed ?? false
    const promoted = principal?.roles.includes('super_admin') !== true
    const passwordHash = claimed ? null : await passwords.hash(password)
    const proved = await audit.recordChange(context, async (trx) => {
      if (passwordHash !== null) await users.update(user.id, { passwordHash }, trx)
      const proved = await claims.prove(user.id, user.email, { removePassword: false }, trx)
      await users.addRole(user.id, 'super_admin', trx)
      return proved
    }, (proved): AuditChange[] => [
      ...(promoted ? [{ event: 'role.assigned' as const, outcome: 'success' as const, targetId: user.id, details: { role: 'super_admin', bootstrap: true } }] : []),
      ...proved?.entries ?? []
    ])
    claims.deliver()
    await proved?.revokeAccess()
    return proved?.released === null || proved === undefined ? 'existing' : 'claimed'
  }

  /** The caller's account with its roles, permissions and second factors. */
  async describe (context: RequestContext) {
    const described = await describeAccount(this.deps.users, callerOf(context).id)
    if (described === undefined) throw new Errors.INVALID_TOKEN()
    return described.account
  }

  /**
   * Changes an account. A new password, address or phone number is a sensitive change: it
   * needs the caller's proof (docs/security.md, "Sensitive changes"). A new password ends every
   * session, and with them their access tokens, and a notice goes out; a new address is
   * unverified until a message sent to it is answered, and the old address is told; so is a
   * new phone number.
   */
  async update (context: RequestContext, id: string, body: UserChanges): Promise<User> {
    const caller = callerOf(context)
    const { users, sessions, audit, verification, notices, reauthentication } = this.deps
    await assertMayManage(users, caller, id)
    const [before, phone] = await Promise.all([users.findById(id), users.findPhone(id)])
    const update = await this.#toUpdate(context, caller, id, body)
    // Giving the same address or number again changes nothing (and keeps it verified).
    if (update.email !== undefined && normalizeEmail(update.email) === before?.email) delete update.email
    if (update.phone !== undefined && update.phone === phone) delete update.phone
    if (before === undefined) throw new Errors.NOT_FOUND('User')
    if (update.email !== undefined || update.phone !== undefined || update.passwordHash !== undefined) {
      await reauthentication.require(context, body, {
        passwordProved: update.passwordHash !== undefined && caller.id === id
      })
    }
    const changed = Object.keys(body).filter((key) => key !== 'current_password' && key !== 'mfa_code')
    // Notices and the new address's verification message are stored with the change.
    // A new password ends every session in the same transaction.
    const { updated: user, sent, revokeAccess } = await audit.recordChange(context, async (trx) => {
      const updated = await users.update(id, update, trx).catch(rethrowServiceError)
      if (updated === undefined) return { updated, sent: [] }
      let revokeAccess: (() => Promise<void>) | undefined
      if (update.passwordHash !== undefined) {
        await notices.add(updated.email, 'password_changed', trx)
        revokeAccess = await sessions.endAllWithin(id, 'password_changed', trx)
      }
      if (update.phone !== undefined) await notices.add(updated.email, 'phone_changed', trx)
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
    if (update.passwordHash !== undefined || update.phone !== undefined || user.email !== before.email) {
      notices.deliver()
    }
    if (sent.length > 0) verification.deliver()
    await revokeAccess?.()
    return user
  }

  /**
   * Deletes an account; deleting one that does not exist succeeds too. Deleting one's own is
   * a sensitive change: it needs a proof, and the address is told.
   */
  async remove (context: RequestContext, id: string, proof: InlineProof): Promise<void> {
    const caller = callerOf(context)
    const { users, audit, notices, reauthentication } = this.deps
    await managedAccount(users, caller, id)
    const user = await users.findById(id)
    const own = caller.id === id ? user : undefined
    if (own !== undefined) await reauthentication.require(context, proof)
    await audit.recordChange(context, async (trx) => {
      const deleted = user !== undefined && await eraseAccount(this.deps, user, trx)
      if (deleted && own !== undefined) await notices.add(own.email, 'account_deleted', trx)
      return deleted
    }, (deleted) => [{ event: 'user.deleted', outcome: 'success', targetId: id, details: { existed: deleted } }])
    if (own !== undefined) notices.deliver()
  }

  /**
   * Turns a validated body into repository changes. Changing one's own password needs
   * the current one; a `manage_users` caller may reset someone else's without it.
   */
  async #toUpdate (context: RequestContext, caller: Caller, id: string, body: UserChanges): Promise<UserUpdate> {
    const { passwords, passwordPolicy, reauthentication, breachedPasswords } = this.deps
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
      // Held to the sign-in lockout, like a sign-in: a stolen access token must not guess the
      // password here. An account without a password (provider sign-in only) has nothing to match.
      await reauthentication.checkPassword(context, id, current, 'current_password')
    }
    await breachedPasswords.check(context, body.password, 'change')
    update.passwordHash = await passwords.hash(body.password)
    return update
  }
}
