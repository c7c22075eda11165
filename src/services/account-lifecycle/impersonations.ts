import type { ImpersonationCreate } from '../../../schemas/impersonation.js'
import type { Role } from '../../../schemas/rbac.js'
import { Errors } from '../../errors.js'
import { hasPermission, permissionLacked } from '../../security/permissions.js'
import { suspendedError, suspensionInForce } from '../../security/suspension.js'
import { ACCESS_TOKEN_TTL_S, type TokenService } from '../../security/tokens.js'
import { uuidv7 } from '../../store/ids.js'
import type { ImpersonationsRepository } from '../../store/impersonations.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import { assertAccountHolder, callerOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { SessionService } from '../sessions/index.js'

/** Roles from least to most: an impersonator's highest must be above the account's highest. */
const RANK: readonly Role[] = ['anonymous', 'user', 'moderator', 'admin', 'super_admin']

function rankOf (roles: readonly Role[]): number {
  return Math.max(0, ...roles.map((role) => RANK.indexOf(role)))
}

/**
 * Impersonation (docs/api.md, "Impersonation"): an administrator sees what a user sees, by
 * acting as them for one access token's life (15 minutes) with a reason. The token carries
 * `act` (RFC 8693) naming the administrator; the sensitive changes and impersonating again are
 * refused inside it (ReauthenticationService, MfaSettingsService); every request made with it
 * is audited with both ids; the user is told once it has ended. It ends with the administrator's
 * session it was started from (the sessions' store revokes its token with theirs).
 */
export class ImpersonationService {
  readonly #now: () => number

  constructor (private readonly deps: {
    users: UsersRepository
    impersonations: ImpersonationsRepository
    sessions: Pick<SessionService, 'currentOf'>
    tokens: TokenService
    audit: AuditTrail
    notices: Notices
    now?: () => number
  }) {
    this.#now = deps.now ?? Date.now
  }

  async start (context: RequestContext, userId: string, { reason }: ImpersonationCreate) {
    const caller = callerOf(context)
    const { users, impersonations, sessions, tokens, audit, notices } = this.deps
    assertAccountHolder(caller, 'impersonating another account')
    if (!hasPermission(caller, 'impersonate_users')) throw new Errors.FORBIDDEN('impersonate_users')
    if (caller.id === userId) throw new Errors.CONFLICT('An account cannot impersonate itself')
    // Proved with a second factor or a passkey: a stolen password alone does not open someone else's account.
    if (!caller.amr.includes('mfa')) throw new Errors.MFA_REQUIRED()
    const [target, user] = await Promise.all([users.findPrincipal(userId), users.findById(userId)])
    if (target === undefined || user === undefined) throw new Errors.NOT_FOUND('User')
    const missing = permissionLacked(caller, target.roles)
    if (missing !== null) throw new Errors.FORBIDDEN(missing)
    if (target.roles.includes('super_admin') || rankOf(target.roles) >= rankOf(caller.roles)) {
      throw new Errors.FORBIDDEN('impersonate_users (only accounts of a lower rank)')
    }
    const suspension = suspensionInForce(target, this.#now())
    if (suspension !== undefined) throw suspendedError(suspension)
    // Nothing would end an impersonation begun from a token no session of the service issued.
    const sessionId = await sessions.currentOf(context)
    if (sessionId === undefined) throw new Errors.FORBIDDEN('impersonate_users (from a signed-in session of this service)')

    const issuedAtMs = this.#now()
    const access = tokens.issueAccessToken({
      sub: userId, roles: [...target.roles], auth_time: Math.floor(issuedAtMs / 1000), amr: [], act: { sub: caller.id }
    }, ACCESS_TOKEN_TTL_S, issuedAtMs)
    // As the token says it: in whole seconds.
    const createdAt = new Date(access.expiresAt.getTime() - ACCESS_TOKEN_TTL_S * 1000).toISOString()
    const expiresAt = access.expiresAt.toISOString()
    const impersonation = await audit.recordChange(context, async (trx) => {
      const stored = await impersonations.create({
        id: uuidv7(),
        user_id: userId,
        impersonator_id: caller.id,
        reason,
        access_jti: access.jti,
        created_at: createdAt,
        expires_at: expiresAt,
        impersonator_session_id: sessionId
      }, trx)
      // Ended since this request was let in: nothing would end the impersonation afterwards.
      if (stored === undefined) throw new Errors.INVALID_TOKEN()
      // Told afterwards: due when the token expires.
      await notices.add(user.email, 'impersonated', trx,
        `It began at ${createdAt} and ended by ${expiresAt}. The reason given: ${reason}. If you did not expect this, contact your administrator.`,
        expiresAt)
      return stored
    }, (stored) => [{ event: 'user.impersonated', outcome: 'success', targetId: userId, details: { impersonation_id: stored.id, reason, expires_at: expiresAt } }])
    return { access_token: access.token, token_type: 'Bearer' as const, expires_in: ACCESS_TOKEN_TTL_S, impersonation }
  }
}
