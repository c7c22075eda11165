import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { CodeSchema, IdSchema } from '../../../schemas/common.js'
import { AuthenticationCredentialSchema, AuthenticationOptionsResponseSchema, PasskeyAuthenticationBodySchema } from '../../../schemas/passkeys.js'
import { EmailSchema } from '../../../schemas/user.js'
import { ACCOUNT_PATH } from '../../authorization-server/paths.js'
import { backupCodesBody, totpSetupBody } from '../../console/account-sign-in.js'
import { jsonField, PROOF, proofOf, TOKEN, TokenFormSchema } from '../../console/forms.js'
import { consolePage, sendPage } from '../../console/pages.js'
import { say } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'
import { callerOf } from '../../services/context.js'

const HIDDEN = { hide: true }
const SIGNED_IN = { access: 'bearer' as const }

const CodeFormSchema = Type.Object({ ...TOKEN, code: CodeSchema }, { additionalProperties: false })
const TotpEnableFormSchema = Type.Object({ ...TOKEN, ...PROOF, code: CodeSchema }, { additionalProperties: false })
const AddressFormSchema = Type.Object({ ...TOKEN, ...PROOF, email: EmailSchema }, { additionalProperties: false })
const UnlinkFormSchema = Type.Object({ ...TOKEN, ...PROOF, identity: IdSchema }, { additionalProperties: false })
const PasskeyProofFormSchema = Type.Object({
  ...TOKEN,
  challenge_id: PasskeyAuthenticationBodySchema.properties.challenge_id,
  // The browser's answer as JSON, checked against the API's schema of it.
  response: Type.String({ minLength: 1, maxLength: 20_000 })
}, { additionalProperties: false })
const CodeRequestFormSchema = Type.Object({
  ...TOKEN, method: Type.Union([Type.Literal('email'), Type.Literal('sms')])
}, { additionalProperties: false })

/**
 * The account page's sign-in forms (docs/console.md): the address, the authenticator app and its
 * backup codes, the linked providers; each through the service the API's route calls, under its
 * rules (the MFA settings' proofs and lockout, the sensitive changes' proof).
 */
const accountSignIn: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, mfaSettings, federation, passkeys, reauthentication } = fastify.services
  /** A form's route: any signed-in person, the page's token checked before anything else. */
  const form = { config: SIGNED_IN, preValidation: fastify.csrfProtection }

  fastify.post('/email', { ...form, schema: { ...HIDDEN, body: AddressFormSchema } }, async (request, reply) => {
    const changes = { email: request.body.email, ...proofOf(request.body) }
    await accounts.update(request.serviceContext, callerOf(request.serviceContext).id, changes)
    return await reply.redirect(`${ACCOUNT_PATH}?done=email`, 303)
  })

  // As POST /auth/mfa/totp/setup: a new key awaiting its first code, shown on its own page.
  fastify.post('/totp/setup', { ...form, schema: { ...HIDDEN, body: TokenFormSchema } }, async (request, reply) => {
    const setup = await mfaSettings.setup(request.serviceContext)
    const viewer = await viewerOf(accounts, request, reply)
    return sendPage(reply, 200, consolePage(say('totpSetupTitle'), await totpSetupBody(setup, viewer.csrf), viewer))
  })

  fastify.post('/totp/enable', { ...form, schema: { ...HIDDEN, body: TotpEnableFormSchema } }, async (request, reply) => {
    const { code } = request.body
    const codes = await mfaSettings.enable(request.serviceContext, { code, ...proofOf(request.body) })
    const viewer = await viewerOf(accounts, request, reply)
    return sendPage(reply, 200, consolePage(say('backupCodesTitle'), backupCodesBody(codes), viewer))
  })

  fastify.post('/backup-codes', { ...form, schema: { ...HIDDEN, body: CodeFormSchema } }, async (request, reply) => {
    const codes = await mfaSettings.replaceBackupCodes(request.serviceContext, request.body.code)
    const viewer = await viewerOf(accounts, request, reply)
    return sendPage(reply, 200, consolePage(say('backupCodesTitle'), backupCodesBody(codes), viewer))
  })

  fastify.post('/totp/disable', { ...form, schema: { ...HIDDEN, body: CodeFormSchema } }, async (request, reply) => {
    await mfaSettings.disable(request.serviceContext, request.body.code)
    return await reply.redirect(`${ACCOUNT_PATH}?done=totp`, 303)
  })

  // The step-up, as POST /auth/reauthenticate: its passkey's options (the form's token in a header,
  // as the passkey registration's), its answer, or a code sent for it.
  fastify.post('/reauthenticate/options', {
    ...form, schema: { ...HIDDEN, response: { 200: AuthenticationOptionsResponseSchema } }
  }, async () => ({ data: await passkeys.authenticationOptions(undefined) }))

  fastify.post('/reauthenticate', { ...form, schema: { ...HIDDEN, body: PasskeyProofFormSchema } }, async (request, reply) => {
    const { challenge_id: challengeId, response } = request.body
    await reauthentication.reauthenticate(request.serviceContext, {
      passkey: { challenge_id: challengeId, response: jsonField(AuthenticationCredentialSchema, response, 'response') }
    })
    return await reply.redirect(`${ACCOUNT_PATH}?done=proved`, 303)
  })

  fastify.post('/reauthenticate/code', { ...form, schema: { ...HIDDEN, body: CodeRequestFormSchema } }, async (request, reply) => {
    await reauthentication.sendCode(request.serviceContext, request.body.method)
    return await reply.redirect(`${ACCOUNT_PATH}?done=codeSent`, 303)
  })

  fastify.post('/identities/unlink', { ...form, schema: { ...HIDDEN, body: UnlinkFormSchema } }, async (request, reply) => {
    await federation.unlink(request.serviceContext, request.body.identity, proofOf(request.body))
    return await reply.redirect(`${ACCOUNT_PATH}?done=identity`, 303)
  })
}

export default accountSignIn
