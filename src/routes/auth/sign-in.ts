import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Device, TokenPair } from '../../../schemas/auth.js'
import type { UserPrincipal } from '../../store/users.js'

export interface MfaChallenge {
  mfa_required: true
  mfa_token: string
  methods: Array<'totp' | 'backup_code'>
}

/**
 * The last step of every sign-in path (password, OAuth): a session, or, when the account
 * has MFA on, the challenge that `/auth/mfa/verify` completes (CONTRACT sections 3 and 4).
 * Failures are cleared only by a completed sign-in: a password answered with a challenge
 * must not wipe the wrong codes counted toward the lockout.
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
  await fastify.signInGuard.recordSuccess(principal.id, request.ip)
  return await startSession(fastify, request, principal, device as Device | undefined, method)
}

/** A signed-in session, audited as `auth.login` with the method that proved the caller (`mfa:totp` after a challenge). */
export async function startSession (
  fastify: FastifyInstance,
  request: FastifyRequest,
  principal: UserPrincipal,
  device: Device | undefined,
  method: string
): Promise<TokenPair> {
  const pair = await fastify.sessions.start(principal, device)
  request.audit('auth.login', { outcome: 'success', actorId: principal.id, targetId: principal.id, details: { method, device } })
  return pair
}
