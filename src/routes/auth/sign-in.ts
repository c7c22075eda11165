import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Device, TokenPair } from '../../../schemas/auth.js'
import type { UserPrincipal } from '../../store/users.js'

export interface MfaChallenge {
  mfa_required: true
  mfa_token: string
  methods: Array<'totp' | 'backup_code'>
}

/** The audit events of a refused secret: a password's, or an MFA code's. */
type FailureEvent = 'auth.login_failed' | 'auth.mfa_failed'

/**
 * CONTRACT section 3: a locked account answers 423 whichever way it signs in; the refusal is
 * audited as a failed sign-in (or MFA check) with `details` (what was presented) and the reason.
 */
export async function refuseIfLocked (
  fastify: FastifyInstance,
  request: FastifyRequest,
  userId: string,
  details: Record<string, unknown>,
  event: FailureEvent = 'auth.login_failed'
): Promise<void> {
  try {
    await fastify.signInGuard.assertNotLocked(userId, request.ip)
  } catch (error) {
    request.audit(event, { outcome: 'failure', actorId: userId, targetId: userId, details: { ...details, reason: 'locked' } })
    throw error
  }
}

/**
 * A secret only the account holder knows (the current password, an MFA code) checked for a
 * caller who is already signed in, held to the sign-in lockout: 423 while the account is
 * locked for this address, and a wrong secret counts as a failed sign-in and is audited. A
 * stolen access token then cannot guess the password, or the TOTP code that would turn MFA
 * off or mint backup codes, faster than sign-in itself allows. `check` answers whether the
 * secret was right; the caller answers a wrong one with its own error.
 */
export async function checkSecret (
  fastify: FastifyInstance,
  request: FastifyRequest,
  userId: string,
  event: FailureEvent,
  details: Record<string, unknown>,
  check: () => Promise<boolean>
): Promise<boolean> {
  await refuseIfLocked(fastify, request, userId, details, event)
  if (await check()) return true
  await fastify.signInGuard.recordFailure(userId, request.ip)
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
