import type { SignInMethods } from '../../../schemas/account-support.js'
import { Errors } from '../../errors.js'
import type { CollectionQueryInput } from '../../collection/query.js'
import type { IdentitiesRepository } from '../../store/identities.js'
import type { MfaRepository } from '../../store/mfa.js'
import type { UsersRepository } from '../../store/users.js'
import { assertMayManage } from '../accounts/index.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, holderOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'
import type { InlineProof, ReauthenticationService } from '../sign-in/index.js'

/**
 * What an operator does for a user who cannot get in, or whose device was lost (docs/api.md,
 * "Account support"): sees how the account signs in and where it is signed in, ends one of its
 * sessions, resets its second factors. Every one keeps the rank rule of `assertMayManage`.
 */
export class AccountSupportService {
  constructor (private readonly deps: {
    users: UsersRepository
    mfa: MfaRepository
    identities: IdentitiesRepository
    sessions: SessionService
    reauthentication: ReauthenticationService
    audit: AuditTrail
    notices: Notices
  }) {}

  async sessionsOf (context: RequestContext, userId: string, query: CollectionQueryInput) {
    const caller = callerOf(context)
    await assertMayManage(this.deps.users, caller, userId)
    return await this.deps.sessions.listOf(userId, query, caller.id)
  }

  /** Ends one of the user's sessions; one's own ends as `DELETE /auth/sessions/{id}` ends it. */
  async endSession (context: RequestContext, userId: string, sessionId: string): Promise<void> {
    const { users, sessions, audit } = this.deps
    const caller = callerOf(context)
    if (caller.id === userId) return await sessions.end(context, sessionId)
    await assertMayManage(users, caller, userId)
    await sessions.endFor(userId, sessionId, audit.recorded(context, [{ event: 'session.ended', outcome: 'success', targetId: userId, details: { id: sessionId } }]))
  }

  async signInMethodsOf (context: RequestContext, userId: string): Promise<SignInMethods> {
    const { users, mfa, identities } = this.deps
    const account = await assertMayManage(users, callerOf(context), userId)
    const [passwordHash, backupCodes, linked] = await Promise.all([
      users.findPasswordHash(userId), mfa.backupCodes(userId), identities.listFor(userId)
    ])
    const providers = [...new Set(linked.map((identity) => identity.provider))]
    return {
      first_factors: [
        ...(passwordHash !== null && passwordHash !== undefined ? ['password' as const] : []),
        ...(account.hasPasskey ? ['passkey' as const] : []),
        ...(providers.length > 0 ? ['provider' as const] : [])
      ],
      second_factors: [...(account.mfaEnabled ? ['totp' as const] : []), ...account.messageFactors],
      backup_codes_left: backupCodes.length,
      identity_providers: providers
    }
  }

  /**
   * Turns every second factor of another account off (TOTP with its backup codes, codes by
   * e-mail and SMS), for someone who lost them: passkeys and sessions stay, and the holder is
   * told. A change to how an account signs in: the operator proves it is them (docs/security.md,
   * "Sensitive changes"), with no key or impersonation. Their own factors go only with their own
   * code (`DELETE /auth/mfa/totp`): 409.
   */
  async resetMfa (context: RequestContext, userId: string, proof: InlineProof): Promise<void> {
    const { users, mfa, audit, notices, reauthentication } = this.deps
    const caller = holderOf(context, 'resetting another account\'s second factors')
    if (caller.id === userId) throw new Errors.CONFLICT('Turn your own second factors off with DELETE /api/v1/auth/mfa/totp and a code')
    const account = await assertMayManage(users, caller, userId)
    await reauthentication.require(context, proof)
    const methods = [...(account.mfaEnabled ? ['totp'] : []), ...account.messageFactors]
    if (methods.length === 0) return
    const recorded = audit.recorded(context, [{ event: 'mfa.reset', outcome: 'success', targetId: userId, details: { methods } }])
    await (await notices.toAccount(users, userId, 'mfa_disabled', recorded))(async (trx) => {
      await mfa.disable(userId, trx)
      await users.setMessageFactor(userId, 'email', null, trx)
      await users.setMessageFactor(userId, 'sms', null, trx)
    })
  }
}
