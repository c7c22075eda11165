import type { TotpSetup } from '../../schemas/mfa.js'
import { Errors } from '../errors.js'
import type { MessageFactor, UsersRepository } from '../store/users.js'
import type { AuditTrail, Recorded } from './audit-trail.js'
import type { Caller, RequestContext } from './context.js'
import type { NoticeKind } from './messages.js'
import type { MfaService } from './mfa.js'
import type { Notices } from './notices.js'
import type { SignInGuard } from './sign-in-guard.js'

export interface MfaSettingsDependencies {
  mfa: MfaService
  guard: SignInGuard
  users: UsersRepository
  notices: Notices
  audit: AuditTrail
}

/** The caller's own second factors: TOTP enrolment, backup codes, codes by e-mail or SMS (docs/api.md, "Multi-factor authentication"). */
export class MfaSettingsService {
  constructor (private readonly deps: MfaSettingsDependencies) {}

  /** A new TOTP secret awaiting its first code. */
  async setup (caller: Caller): Promise<TotpSetup> {
    const user = await this.deps.users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return await this.deps.mfa.setup(user)
  }

  /** Turns TOTP on with a first code of the pending secret; answers the first backup codes. */
  async enable (context: RequestContext, caller: Caller, code: string): Promise<string[]> {
    return await this.deps.mfa.enable(caller.id, code,
      await this.#noticed(caller.id, 'mfa_enabled', this.deps.audit.recorded(context, [{ event: 'mfa.enabled', outcome: 'success', targetId: caller.id, details: { method: 'totp' } }])))
  }

  /** A fresh set of backup codes for a TOTP code; the old set stops working. */
  async replaceBackupCodes (context: RequestContext, caller: Caller, code: string): Promise<string[]> {
    await this.#assertFactorCode(context, caller.id, 'backup_codes', async () => await this.deps.mfa.acceptTotpCode(caller.id, code))
    return await this.deps.mfa.replaceBackupCodes(caller.id)
  }

  /** Turns TOTP off with a TOTP or backup code. */
  async disable (context: RequestContext, caller: Caller, code: string): Promise<void> {
    const { mfa, audit } = this.deps
    await this.#assertFactorCode(context, caller.id, 'disable', async () => await mfa.verifyCode(caller.id, code) !== null)
    await mfa.disable(caller.id, await this.#noticed(caller.id, 'mfa_disabled', audit.recorded(context, [{ event: 'mfa.disabled', outcome: 'success', targetId: caller.id, details: { method: 'totp' } }])))
  }

  /**
   * Turns sign-in codes by e-mail (to a verified address) or by SMS (to the account's phone
   * number) on: a challenge then offers them.
   */
  async enableMessageFactor (context: RequestContext, caller: Caller, factor: MessageFactor): Promise<void> {
    const { users, audit, notices } = this.deps
    const user = await users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    if (factor === 'email' && !user.email_verified) throw new Errors.EMAIL_NOT_VERIFIED()
    if (factor === 'sms' && await users.findPhone(caller.id) === null) throw new Errors.CONFLICT('Set a phone number (PATCH /api/v1/users/{id}) before turning SMS codes on')
    await notices.with(audit.recorded(context, [{ event: 'mfa.enabled', outcome: 'success', targetId: caller.id, details: { method: factor } }]), user.email, 'mfa_enabled')(
      async (trx) => { await users.setMessageFactor(caller.id, factor, new Date().toISOString(), trx) })
  }

  async disableMessageFactor (context: RequestContext, caller: Caller, factor: MessageFactor): Promise<void> {
    await (await this.#noticed(caller.id, 'mfa_disabled', this.deps.audit.recorded(context, [{ event: 'mfa.disabled', outcome: 'success', targetId: caller.id, details: { method: factor } }])))(
      async (trx) => { await this.deps.users.setMessageFactor(caller.id, factor, null, trx) })
  }

  /**
   * A code of the caller's enabled factor, held to the sign-in lockout: the right code turns
   * MFA off or mints backup codes, so it must not be guessable with a stolen access token.
   * (Enabling checks a code of the pending secret, which the caller was just shown: nothing
   * to guess there.)
   */
  async #assertFactorCode (context: RequestContext, userId: string, action: string, check: () => Promise<boolean>): Promise<void> {
    await this.deps.mfa.assertEnabled(userId)
    if (!await this.deps.guard.checkSecret(context, userId, 'auth.mfa_failed', { action }, check)) throw new Errors.INVALID_MFA_CODE()
  }

  /**
   * `recorded`, with a notice to the account's address stored in the same transaction: it goes
   * out of band, so an enrolment or removal by someone else is noticed.
   */
  async #noticed (userId: string, kind: NoticeKind, recorded: Recorded): Promise<Recorded> {
    const user = await this.deps.users.findById(userId)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return this.deps.notices.with(recorded, user.email, kind)
  }
}
