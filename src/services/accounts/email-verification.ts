import type { User } from '../../../schemas/user.js'
import type { Config } from '../../config/index.js'
import { Errors } from '../../errors.js'
import { hashToken, newOneTimeToken, ONE_TIME_TOKENS_PER_HOUR } from '../../security/tokens.js'
import type { OneTimeTokensRepository } from '../../store/one-time-tokens.js'
import type { UsersRepository } from '../../store/users.js'
import type { Db } from '../../store/types.js'
import type { AccountClaims } from '../sign-in/index.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import type { MessageTemplates } from '../messaging/index.js'

const HOUR = 60 * 60 * 1000
/** A verification link is good this long. */
export const VERIFICATION_TTL_MS = 24 * HOUR

export interface EmailVerificationDependencies {
  users: UsersRepository
  tokens: OneTimeTokensRepository
  templates: MessageTemplates
  audit: AuditTrail
  claims: AccountClaims
  mode: Config['messages']['emailVerification']
  deliver: () => void
  now?: () => number
}

/** Proving an address (docs/api.md, "E-mail verification and recovery"): a link sent to it, answered once. */
export class EmailVerificationService {
  readonly #now: () => number

  constructor (private readonly deps: EmailVerificationDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * At registration and after an e-mail change, in the change's transaction `trx`: a message
   * to the new address, unless verification is off, stored with the change so that neither is
   * kept without the other. Answers the audit entries to record with the change; call
   * `deliver` once it is committed.
   */
  async storeOnChange (user: Pick<User, 'id' | 'email'>, trx: Db): Promise<AuditChange[]> {
    if (this.deps.mode === 'off' || !await this.#store(user, trx)) return []
    return [{ event: 'email.verification_sent', outcome: 'success', targetId: user.id }]
  }

  /** Starts delivering what was stored. */
  deliver (): void {
    this.deps.deliver()
  }

  /** Asked for by the account holder: false when the address is verified already (or enough were sent this hour). */
  async resend (context: RequestContext): Promise<boolean> {
    const caller = callerOf(context)
    const user = await this.deps.users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    if (user.email_verified) return false
    const sent = await this.deps.audit.recordChange(context, async (trx) => await this.#store(user, trx),
      (stored): AuditChange[] => stored ? [{ event: 'email.verification_sent', outcome: 'success', targetId: user.id }] : [])
    if (sent) this.deliver()
    return sent
  }

  /**
   * Spends a verification token: its address is verified, if it is still the account's. The
   * first proof of an address claims the account (AccountClaims): what was attached before is
   * removed in the same transaction.
   */
  async verify (context: RequestContext, token: string): Promise<User> {
    const { tokens, claims, audit } = this.deps
    const proved = await audit.recordChange(context, async (trx) => {
      const spent = await tokens.spend(hashToken(token), 'email_verification', new Date(this.#now()).toISOString(), trx)
      const proved = spent === undefined
        ? undefined
        : await claims.prove(spent.userId, spent.email, { removePassword: false }, trx)
      // Nothing is kept of a token spent for an address the account no longer has.
      if (proved === undefined) throw new Errors.INVALID_ONE_TIME_TOKEN()
      return proved
    }, ({ user, entries }) => [{ event: 'email.verified', outcome: 'success', actorId: user.id, targetId: user.id }, ...entries])
    claims.deliver()
    await proved.revokeAccess()
    return proved.user
  }

  /** Stores a token and its message on `db`; false when the account was sent enough verification messages this hour. */
  async #store (user: Pick<User, 'id' | 'email'>, db: Db): Promise<boolean> {
    const { tokens, templates } = this.deps
    const now = this.#now()
    const { token, hash } = newOneTimeToken()
    return await tokens.issue({ tokenHash: hash, userId: user.id, purpose: 'email_verification', email: user.email, expiresAt: new Date(now + VERIFICATION_TTL_MS).toISOString() },
      templates.emailVerification(user.email, token, VERIFICATION_TTL_MS / HOUR), new Date(now).toISOString(),
      { max: ONE_TIME_TOKENS_PER_HOUR, since: new Date(now - HOUR).toISOString() }, db)
  }
}
