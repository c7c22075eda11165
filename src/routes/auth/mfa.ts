import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { TokenPairResponseSchema } from '../../../schemas/auth.js'
import { described } from '../../../schemas/common.js'
import { errorResponses } from '../../../schemas/errors.js'
import { BackupCodesResponseSchema, CodeBodySchema, MfaCodeRequestBodySchema, MfaVerifyBodySchema, TotpEnableBodySchema, TotpSetupResponseSchema } from '../../../schemas/mfa.js'
import { ProofBodySchema } from '../../../schemas/reauthentication.js'
import { AcceptedResponseSchema } from '../../../schemas/recovery.js'

/**
 * TOTP enrolment, backup codes, codes by message, and completing
 * an MFA sign-in (docs/api.md, "Multi-factor authentication").
 */
const mfa: FastifyPluginAsyncTypebox = async (fastify) => {
  const { mfaSettings, signIn } = fastify.services

  fastify.post('/totp/setup', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.totp.setup',
      summary: 'Start TOTP enrolment: a secret, its provisioning URI and QR code (not for an account whose address was never verified: 403 EMAIL_NOT_VERIFIED)',
      response: { 200: described(TotpSetupResponseSchema, 'The secret, its provisioning URI and QR code'), ...errorResponses({ body: true }, 401, 403, 409) }
    }
  }, async (request) => ({ data: await mfaSettings.setup(request.serviceContext) }))

  fastify.post('/totp/enable', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.totp.enable',
      summary: 'Finish enrolment with a first code; answers 10 single-use backup codes (a sensitive change: needs a proof)',
      body: TotpEnableBodySchema,
      response: { 200: described(BackupCodesResponseSchema, 'TOTP is on; the backup codes, shown only now'), ...errorResponses({ body: true }, 401, 403, 409, 423) }
    }
  }, async (request) => {
    const backupCodes = await mfaSettings.enable(request.serviceContext, request.body)
    return { data: { backup_codes: backupCodes } }
  })

  fastify.post('/backup-codes', {
    config: { access: 'bearer' },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.backupCodes.create',
      summary: 'A fresh set of 10 backup codes for a TOTP code; the old set stops working',
      body: CodeBodySchema,
      response: { 200: described(BackupCodesResponseSchema, 'The new backup codes, shown only now'), ...errorResponses({ body: true }, 401, 409, 423) }
    }
  }, async (request) => {
    const backupCodes = await mfaSettings.replaceBackupCodes(request.serviceContext, request.body.code)
    return { data: { backup_codes: backupCodes } }
  })

  fastify.delete('/totp', {
    config: { access: 'bearer', allowWithoutMfa: true },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.totp.disable',
      summary: 'Turn TOTP off (with a TOTP or backup code)',
      body: CodeBodySchema,
      response: { 204: { type: 'null', description: 'Disabled' }, ...errorResponses({ body: true }, 401, 409, 423) }
    }
  }, async (request, reply) => {
    await mfaSettings.disable(request.serviceContext, request.body.code)
    return await reply.code(204).send()
  })

  for (const factor of ['email', 'sms'] as const) {
    const name = factor === 'email' ? 'e-mail (the address must be verified)' : 'SMS (to the account\'s phone number)'
    fastify.post(`/${factor}/enable`, {
      config: { access: 'bearer', allowWithoutMfa: true },
      schema: {
        tags: ['mfa'],
        operationId: `auth.mfa.${factor}.enable`,
        summary: `Turn sign-in codes by ${name} on (a sensitive change: needs a proof)`,
        body: ProofBodySchema,
        response: { 204: { type: 'null', description: 'On' }, ...errorResponses({ body: true }, 401, 403, 409, 423) }
      }
    }, async (request, reply) => {
      await mfaSettings.enableMessageFactor(request.serviceContext, factor, request.body ?? {})
      return await reply.code(204).send()
    })

    fastify.delete(`/${factor}`, {
      config: { access: 'bearer', allowWithoutMfa: true },
      schema: {
        tags: ['mfa'],
        operationId: `auth.mfa.${factor}.disable`,
        summary: `Turn sign-in codes by ${factor === 'email' ? 'e-mail' : 'SMS'} off (a sensitive change: needs a proof)`,
        body: ProofBodySchema,
        response: { 204: { type: 'null', description: 'Off' }, ...errorResponses({ body: true }, 401, 403, 423) }
      }
    }, async (request, reply) => {
      await mfaSettings.disableMessageFactor(request.serviceContext, factor, request.body ?? {})
      return await reply.code(204).send()
    })
  }

  fastify.post('/challenge', {
    config: { access: 'public' },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.challenge',
      summary: 'Send a sign-in code for a challenge by e-mail or SMS; /auth/mfa/verify takes it',
      body: MfaCodeRequestBodySchema,
      response: { 202: described(AcceptedResponseSchema, 'A sign-in code is on its way'), ...errorResponses({ body: true }, 401, 409) }
    }
  }, async (request, reply) => {
    await signIn.sendChallengeCode(request.serviceContext, request.body)
    return await reply.code(202).send({ data: { message: 'A sign-in code is on its way.' } })
  })

  fastify.post('/verify', {
    config: { access: 'public' },
    schema: {
      tags: ['mfa'],
      operationId: 'auth.mfa.verify',
      summary: 'Complete a sign-in with the challenge\'s mfa_token and a TOTP or backup code',
      body: MfaVerifyBodySchema,
      response: { 200: described(TokenPairResponseSchema, 'Signed in: a token pair'), ...errorResponses({ body: true }, 401, 403, 423) }
    }
  }, async (request) => ({ data: await signIn.answerChallenge(request.serviceContext, request.body) }))
}

export default mfa
