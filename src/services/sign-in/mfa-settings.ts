import type { TotpSetup } from '../../../schemas/mfa.js'
import { Errors } from '../../errors.js'
import type { MessageFactor, UsersRepository } from '../../store/users.js'
import { claimedAccount } from './account-claims.js'
import type { AuditTrail } from '../audit/index.js'
import { assertAccountHolder, callerOf, holderOf, type RequestContext } from '../context.js'
import type { MfaService } from './mfa.js'
import type { Notices } from '../messaging/index.js'
import type { InlineProof, ReauthenticationService } from './reauthentication.js'
import type { SignInGuard } from './sign-in-guard.js'

export interface MfaSettingsDependencies {
  mfa: MfaService
  guard: SignInGuard
  users: UsersRepository
  /** Every change here is a sensitive change (docs/security.md, "Sensitive changes"). */
  reauthentication: ReauthenticationService
  notices: Notices
  audit: AuditTrail
}

/**
 * The caller's own second factors: TOTP enrolment, backup codes, codes
 * by e-mail or SMS (docs/api.md, "Multi-factor authentication").
 */
export class MfaSettingsService {
  constructor (private readonly deps: MfaSettingsDependencies) {}

  /**
   * A new TOTP secret awaiting its first code. An unclaimed account (its address never proved)
   * enrols no second factor: it would outlive the owner's claim (docs/security.md, "Account claiming").
   */
  async setup (context: RequestContext): Promise<TotpSetup> {
    // The first step of a sensitive change: it shows the secret and replaces one pending.
    const caller = holderOf(context, 'a sensitive change')
    return await this.deps.mfa.setup(await claimedAccount(this.deps.users, caller.id))
  }

  /**
   * Turns TOTP on (or replaces it) with a first code of the pending secret, given a proof of
   * the account holder; answers the first backup codes.
   */
  async enable (context: RequestContext, { code, ...proof }: { code: string } & InlineProof): Promise<string[]> {
    const caller = callerOf(context)
    await claimedAccount(this.deps.users, caller.id)
    await this.deps.reauthentication.require(context, proof, { firstEnrolment: true })
    return await this.deps.mfa.enable(caller.id, code,
      await this.deps.notices.toAccount(this.deps.users, caller.id, 'mfa_enabled', this.deps.audit.recorded(context, [{ event: 'mfa.enabled', outcome: 'success', targetId: caller.id, details: { method: 'totp' } }])))
  }

  /**
   * A fresh set of backup codes for a TOTP code (the proof); the old set stops working. Audited and told to the owner.
   */
  async replaceBackupCodes (context: RequestContext, code: string): Promise<string[]> {
    const caller = callerOf(context)
    const { mfa, audit } = this.deps
    await this.#assertFactorCode(context, caller.id, 'backup_codes', async () => await mfa.acceptTotpCode(caller.id, code))
    return await (await this.deps.notices.toAccount(this.deps.users, caller.id, 'backup_codes_replaced', audit.recorded(context, [{ event: 'mfa.backup_codes_replaced', outcome: 'success', targetId: caller.id }])))(
      async (trx) => await mfa.replaceBackupCodes(caller.id, trx))
  }

  /** Turns TOTP off with a TOTP or backup code. */
  async disable (context: RequestContext, code: string): Promise<void> {
    const caller = callerOf(context)
    const { mfa, audit } = this.deps
    await this.#assertFactorCode(context, caller.id, 'disable', async () => await mfa.verifyCode(caller.id, code) !== null)
    await mfa.disable(caller.id, await this.deps.notices.toAccount(this.deps.users, caller.id, 'mfa_disabled', audit.recorded(context, [{ event: 'mfa.disabled', outcome: 'success', targetId: caller.id, details: { method: 'totp' } }])))
  }

  /**
   * Turns sign-in codes by e-mail (to a verified address) or by SMS (to the account's phone
   * number) on: a challenge then offers them.
   */
  async enableMessageFactor (context: RequestContext, factor: MessageFactor, proof: InlineProof): Promise<void> {
    const caller = callerOf(context)
    const { users, audit, notices } = this.deps
    const user = await claimedAccount(this.deps.users, caller.id)
    if (factor === 'email' && !user.email_verified) throw new Errors.EMAIL_NOT_VERIFIED()
    await this.deps.reauthentication.require(context, proof)
    if (factor === 'sms' && await users.findPhone(caller.id) === null) throw new Errors.CONFLICT('Set a phone number (PATCH /api/v1/users/{id}) before turning SMS codes on')
    await notices.with(audit.recorded(context, [{ event: 'mfa.enabled', outcome: 'success', targetId: caller.id, details: { method: factor } }]), user.email, 'mfa_enabled')(
      async (trx) => { await users.setMessageFactor(caller.id, factor, new Date().toISOString(), trx) })
  }

  async disableMessageFactor (context: RequestContext, factor: MessageFactor, proof: InlineProof): Promise<void> {
    const caller = callerOf(context)
    await this.deps.reauthentication.require(context, proof)
    await (await this.deps.notices.toAccount(this.deps.users, caller.id, 'mfa_disabled', this.deps.audit.recorded(context, [{ event: 'mfa.disabled', outcome: 'success', targetId: caller.id, details: { method: factor } }])))(
      async (trx) => { await this.deps.users.setMessageFactor(caller.id, factor, null, trx) })
  }

  /**
   * A code of the caller's enabled factor, held to the sign-in lockout: the right code turns
   * MFA off or mints backup codes, so it must not be guessable with a stolen access token.
   * (Enabling checks a code of the pending secret, which the caller was just shown: nothing
   * to guess there.)
   */
  async #assertFactorCode (
    context: RequestContext,
    userId: string,
    action: string,
    check: () => Promise<boolean>
  ): Promise<void> {
    assertAccountHolder(callerOf(context), 'a sensitive change')
    await this.deps.mfa.assertEnabled(userId)
    if (!await this.deps.guard.checkSecret(context, userId, 'auth.mfa_failed', { action }, check)) throw new Errors.INVALID_MFA_CODE()
  }
}
