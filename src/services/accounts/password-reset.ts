import type { ForgotPasswordBody, ResetPasswordBody } from '../../../schemas/recovery.js'
import type { PasswordPolicy } from '../../security/password-policy.js'
import type { PasswordHasher } from '../../security/passwords.js'
import { hashToken, newOneTimeToken, ONE_TIME_TOKENS_PER_HOUR } from '../../security/tokens.js'
import { Errors } from '../../errors.js'
import type { OneTimeTokensRepository } from '../../store/one-time-tokens.js'
import { normalizeEmail, type UsersRepository } from '../../store/users.js'
import { assertPasswordPolicy } from '../../security/password-policy.js'
import type { AccountClaims } from '../sign-in/index.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import type { BreachedPasswords } from './breached-passwords.js'
import type { RequestContext } from '../context.js'
import type { MessageTemplates, Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'

const MINUTE = 60 * 1000
/** A reset link is good this long. */
export const RESET_TTL_MS = 30 * MINUTE

export interface PasswordResetDependencies {
  users: UsersRepository
  tokens: OneTimeTokensRepository
  passwords: PasswordHasher
  passwordPolicy: PasswordPolicy
  breachedPasswords: BreachedPasswords
  sessions: SessionService
  claims: AccountClaims
  templates: MessageTemplates
  notices: Notices
  audit: AuditTrail
  deliver: () => void
  now?: () => number
}

/** A forgotten password (docs/api.md, "Resetting a password"): a link by e-mail, then a new password. */
export class PasswordResetService {
  readonly #now: () => number

  constructor (private readonly deps: PasswordResetDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * Stores a reset token and its message, with the entry that records the request, in one
   * transaction, and resolves once they are stored (delivery follows, off the request). An
   * address without an account runs the same reads and writes its entry the same way, so the
   * answer takes about as long whichever it is.
   */
  async requestReset (context: RequestContext, { email }: ForgotPasswordBody): Promise<void> {
    const { users, tokens, templates, audit, deliver } = this.deps
    const user = await users.findByEmail(email)
    const now = this.#now()
    const since = new Date(now - 60 * MINUTE).toISOString()
    if (user === undefined) {
      await audit.recordChange(context, async (trx) => { await tokens.rehearseIssue('password_reset', since, trx) },
        () => [{ event: 'auth.password_reset_requested', outcome: 'failure', details: { email, reason: 'unknown_email' } }])
      return
    }
    const { token, hash } = newOneTimeToken()
    const issued = await audit.recordChange(context, async (trx) => await tokens.issue(
      { tokenHash: hash, userId: user.id, purpose: 'password_reset', email: user.email, expiresAt: new Date(now + RESET_TTL_MS).toISOString() },
      templates.passwordReset(user.email, token, RESET_TTL_MS / MINUTE), new Date(now).toISOString(),
      { max: ONE_TIME_TOKENS_PER_HOUR, since }, trx),
    (stored): AuditChange[] => [stored
      ? { event: 'auth.password_reset_requested', outcome: 'success', targetId: user.id }
      : { event: 'auth.password_reset_requested', outcome: 'failure', targetId: user.id, details: { reason: 'too_many_requests' } }])
    if (issued) deliver()
  }

  /**
   * A new password for a reset token: the policy applies (checked before the token is spent),
   * every session of the account ends, every other reset token stops working, and a notice
   * goes to the address. The message proved the address, so it counts as verified; a first
   * proof claims the account (AccountClaims), removing what was attached before.
   */
  async reset (context: RequestContext, { token, password }: ResetPasswordBody): Promise<void> {
    const { users, tokens, passwords, passwordPolicy, breachedPasswords, sessions, claims, notices, audit } = this.deps
    assertPasswordPolicy(password, passwordPolicy)
    await breachedPasswords.check(context, password, 'reset')
    const now = new Date(this.#now()).toISOString()
    // Hashed before the token is spent: a hashing queue that is full (503) leaves it usable.
    const passwordHash = await passwords.hash(password)
    const spent = await tokens.spend(hashToken(token), 'password_reset', now)
    const user = spent === undefined ? undefined : await users.findById(spent.userId)
    // A reset sent before an e-mail change does not reset the account the new address holds.
    if (spent === undefined || user === undefined || normalizeEmail(user.email) !== spent.email) {
      throw new Errors.INVALID_ONE_TIME_TOKEN()
    }
    const { proved, revokeAccess } = await audit.recordChange(context, async (trx) => {
      await users.update(user.id, { passwordHash }, trx)
      const proved = await claims.prove(user.id, spent.email, { removePassword: false }, trx)
      await tokens.spendAll(user.id, 'password_reset', now, trx)
      await notices.add(user.email, 'password_reset', trx)
      return { proved, revokeAccess: await sessions.endAllWithin(user.id, 'password_reset', trx) }
    }, ({ proved }): AuditChange[] => [{ event: 'auth.password_reset', outcome: 'success', actorId: user.id, targetId: user.id }, ...proved?.entries ?? []])
    notices.deliver()
    await proved?.revokeAccess()
    await revokeAccess()
  }
}
