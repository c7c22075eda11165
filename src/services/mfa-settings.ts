import type { TotpSetup } from '../../schemas/mfa.js'
import { Errors } from '../errors.js'
import type { UsersRepository } from '../store/users.js'
import type { AuditTrail } from './audit-trail.js'
import type { Caller, RequestContext } from './context.js'
import type { MessageSender } from './message-sender.js'
import type { MfaService } from './mfa.js'
import type { SignInGuard } from './sign-in-guard.js'

export interface MfaSettingsDependencies {
  mfa: MfaService
  guard: SignInGuard
  users: UsersRepository
  messages: MessageSender
  audit: AuditTrail
  /** Where a notice that could not be sent is reported. */
  warn: (entry: Record<string, unknown>, message: string) => void
}

/** The caller's own second factor: TOTP enrolment, backup codes, turning it off (docs/api.md, "Multi-factor authentication"). */
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
    const backupCodes = await this.deps.mfa.enable(caller.id, code)
    this.deps.audit.recordIn(context, 'mfa.enabled', { outcome: 'success', targetId: caller.id, details: { method: 'totp' } })
    await this.#notify(caller.id, 'Two-factor authentication was enabled on your account')
    return backupCodes
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
    await mfa.disable(caller.id)
    audit.recordIn(context, 'mfa.disabled', { outcome: 'success', targetId: caller.id, details: { method: 'totp' } })
    await this.#notify(caller.id, 'Two-factor authentication was disabled on your account')
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

  /** Security notices go out of band, so an enrolment or removal by someone else is noticed. */
  async #notify (userId: string, subject: string): Promise<void> {
    const user = await this.deps.users.findById(userId)
    if (user === undefined) return
    await this.deps.messages.send('email', user.email, subject, `${subject}. If this was not you, contact your administrator.`)
      .catch((error: unknown) => { this.deps.warn({ err: error }, 'security notice not sent') })
  }
}
