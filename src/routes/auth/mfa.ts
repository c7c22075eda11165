import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { type Device, TokenPairResponseSchema } from '../../../schemas/auth.js'
import { errorResponses } from '../../../schemas/errors.js'
import { BackupCodesResponseSchema, CodeBodySchema, MfaVerifyBodySchema, TotpSetupResponseSchema } from '../../../schemas/mfa.js'
import { Errors } from '../../errors.js'
import { tokenFailure } from '../../plugins/authentication.js'
import type { MfaMethod } from '../../services/mfa.js'
import { checkSecret, startSession } from './sign-in.js'
import { BEARER } from '../../../schemas/common.js'

/** CONTRACT section 4: TOTP enrolment, backup codes, and completing an MFA sign-in. */
const mfa: FastifyPluginAsyncTypebox = async (fastify) => {
  const { mfa: service, repositories, tokens, messageSender } = fastify

  /** Security notices go out of band, so an enrolment or removal by someone else is noticed. */
  async function notify (email: string, subject: string) {
    await messageSender.send('email', email, subject, `${subject}. If this was not you, contact your administrator.`)
      .catch((error: unknown) => fastify.log.warn({ err: error }, 'security notice not sent'))
  }

  /**
   * A code of the caller's enabled factor, held to the sign-in lockout (checkSecret): the right
   * code (TOTP, or a backup code to turn MFA off) turns MFA off or mints backup codes, so it
   * must not be guessable with a stolen access token. (Enabling checks a code of the pending
   * secret, which the caller was just shown: nothing to guess there.)
   */
  async function assertFactorCode (request: FastifyRequest, userId: string, action: string, check: () => Promise<boolean>): Promise<void> {
    await service.assertEnabled(userId)
    if (!await checkSecret(fastify, request, userId, 'auth.mfa_failed', { action }, check)) throw new Errors.INVALID_MFA_CODE()
  }

  fastify.post('/totp/setup', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      summary: 'Start TOTP enrolment: a secret, its provisioning URI and QR code',
      security: BEARER,
      response: { 200: TotpSetupResponseSchema, ...errorResponses({ body: true }, 401, 409) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    const user = await repositories.users.findById(caller.id)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    return { data: await service.setup(user) }
  })

  fastify.post('/totp/enable', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      summary: 'Finish enrolment with a first code; answers 10 single-use backup codes',
      security: BEARER,
      body: CodeBodySchema,
      response: { 200: BackupCodesResponseSchema, ...errorResponses({ body: true }, 401, 409) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    const backupCodes = await service.enable(caller.id, request.body.code)
    request.audit('mfa.enabled', { outcome: 'success', targetId: caller.id, details: { method: 'totp' } })
    const user = await repositories.users.findById(caller.id)
    if (user !== undefined) await notify(user.email, 'Two-factor authentication was enabled on your account')
    return { data: { backup_codes: backupCodes } }
  })

  fastify.post('/backup-codes', {
    onRequest: [fastify.authenticate],
    schema: {
      tags: ['mfa'],
      summary: 'A fresh set of 10 backup codes for a TOTP code; the old set stops working',
      security: BEARER,
      body: CodeBodySchema,
      response: { 200: BackupCodesResponseSchema, ...errorResponses({ body: true }, 401, 409, 423) }
    }
  }, async (request) => {
    const caller = fastify.authorize(request, 'read')
    await assertFactorCode(request, caller.id, 'backup_codes', async () => await service.acceptTotpCode(caller.id, request.body.code))
    return { data: { backup_codes: await service.replaceBackupCodes(caller.id) } }
  })

  fastify.delete('/totp', {
    onRequest: [fastify.authenticate],
    config: { allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      summary: 'Turn TOTP off (with a TOTP or backup code)',
      security: BEARER,
      body: CodeBodySchema,
      response: { 204: { type: 'null', description: 'Disabled' }, ...errorResponses({ body: true }, 401, 409, 423) }
    }
  }, async (request, reply) => {
    const caller = fastify.authorize(request, 'read')
    await assertFactorCode(request, caller.id, 'disable', async () => await service.verifyCode(caller.id, request.body.code) !== null)
    await service.disable(caller.id)
    request.audit('mfa.disabled', { outcome: 'success', targetId: caller.id, details: { method: 'totp' } })
    const user = await repositories.users.findById(caller.id)
    if (user !== undefined) await notify(user.email, 'Two-factor authentication was disabled on your account')
    return await reply.code(204).send()
  })

  fastify.post('/verify', {
    schema: {
      tags: ['mfa'],
      summary: 'Complete a sign-in with the challenge\'s mfa_token and a TOTP or backup code',
      body: MfaVerifyBodySchema,
      response: { 200: TokenPairResponseSchema, ...errorResponses({ body: true }, 401, 423) }
    }
  }, async (request) => {
    let claims
    try {
      claims = tokens.verify(request.body.mfa_token, 'mfa')
    } catch (error) {
      throw tokenFailure(error)
    }
    const userId = claims.sub
    // A challenge ends with its account.
    const principal = await repositories.users.findPrincipal(userId)
    if (principal === undefined) throw new Errors.INVALID_TOKEN()
    // Wrong codes count toward the same lockout as wrong passwords.
    let method = null as MfaMethod | null
    const right = await checkSecret(fastify, request, userId, 'auth.mfa_failed', {}, async () => {
      method = await service.verifyCode(userId, request.body.code)
      return method !== null
    })
    if (!right) throw new Errors.INVALID_MFA_CODE()
    const claimed = await repositories.revocations.claim(claims.jti, new Date(claims.exp * 1000).toISOString(), new Date().toISOString())
    if (!claimed) throw new Errors.INVALID_TOKEN() // the challenge was already answered
    request.audit('auth.mfa_verified', { outcome: 'success', actorId: userId, targetId: userId, details: { method } })
    return { data: await startSession(fastify, request, principal, claims.device as Device | undefined, `mfa:${method}`) }
  })
}

export default mfa
