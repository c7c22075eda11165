import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Device, TokenPair } from '../../../schemas/auth.js'
import { Errors } from '../../errors.js'
import type { UserPrincipal } from '../../store/users.js'

export interface MfaChallenge {
  mfa_required: true
  mfa_token: string
  methods: Array<'totp' | 'backup_code'>
}

/** The audit events of a refused secret: a password's, or an MFA code's. */
type FailureEvent = 'auth.login_failed' | 'auth.mfa_failed'

/** Awaits a lock check, auditing its 423 with `details` (what was presented) and the reason. */
async function auditLockRefusal<T> (request: FastifyRequest, userId: string, event: FailureEvent, details: Record<string, unknown>, check: Promise<T>): Promise<T> {
  try {
    return await check
  } catch (error) {
    if (error instanceof Errors.ACCOUNT_LOCKED) {
      request.audit(event, { outcome: 'failure', actorId: userId, targetId: userId, details: { ...details, reason: 'locked' } })
    }
    throw error
  }
}

/** CONTRACT section 3: a locked account answers 423 whichever way it signs in, OAuth included. */
export async function refuseIfLocked (fastify: FastifyInstance, request: FastifyRequest, userId: string, details: Record<string, unknown>): Promise<void> {
  await auditLockRefusal(request, userId, 'auth.login_failed', details, fastify.signInGuard.assertNotLocked(userId, request.ip))
}

/**
 * A secret only the account holder knows (a password, an MFA code), held to the sign-in
 * lockout (CONTRACT section 3): 423 while the account is locked for this address, and a
 * wrong secret counts as a failed sign-in and is audited with `details`. The lockout is
 * checked again when the attempt settles (SignInGuard.settle), so simultaneous guesses get no
 * more answers than the rule allows. Used by sign-in and MFA verification, and where a
 * signed-in caller proves the secret again (the current password of a password change, the
 * code that turns MFA off or mints backup codes), so that a stolen access token cannot guess
 * it faster than sign-in allows. `check` answers whether the secret was right and acts on
 * nothing (spending a single-use code is part of checking it): the caller acts once this
 * answers true, and answers false with its own error.
 */
export async function checkSecret (
  fastify: FastifyInstance,
  request: FastifyRequest,
  userId: string,
  event: FailureEvent,
  details: Record<string, unknown>,
  check: () => Promise<boolean>
): Promise<boolean> {
  const guard = fastify.signInGuard
  await auditLockRefusal(request, userId, event, details, guard.assertNotLocked(userId, request.ip))
  const right = await check()
  await auditLockRefusal(request, userId, event, details, guard.settle(userId, request.ip, right))
  if (right) return true
  request.audit(event, { outcome: 'failure', actorId: userId, targetId: userId, details })
  return false
}

/**
 * The last step of every sign-in path (password, OAuth): a session, or, when the account
 * has MFA on, the challenge that `/auth/mfa/verify` completes (CONTRACT sections 3 and 4).
 */
export async function completeSignIn (
  fastify: FastifyInstance,
  request: FastifyRequest,
  principal: UserPrincipal,
  device: Device | Record<string, unknown> | undefined,
  method: string
): Promise<TokenPair | MfaChallenge> {
  if (principal.mfaEnabled) {
    const challenge = fastify.tokens.issueMfaToken(principal.id, device === undefined ? {} : { ...device })
    return { mfa_required: true, mfa_token: challenge.token, methods: ['totp', 'backup_code'] }
  }
  return await startSession(fastify, request, principal, device as Device | undefined, method)
}

/**
 * A completed sign-in: the address's failures stop counting toward the lockout (only here,
 * so a password answered with a challenge does not wipe the wrong codes counted so far), and
 * a session, audited as `auth.login` with the method that proved the caller (`mfa:totp`
 * after a challenge).
 */
export async function startSession (
  fastify: FastifyInstance,
  request: FastifyRequest,
  principal: UserPrincipal,
  device: Device | undefined,
  method: string
): Promise<TokenPair> {
  await fastify.signInGuard.recordSuccess(principal.id, request.ip)
  const pair = await fastify.sessions.start(principal, device)
  request.audit('auth.login', { outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method, device } })
  return pair
}
