import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { IdParamsSchema } from '../../../schemas/common.js'
import { AccountExportResponseSchema } from '../../../schemas/account-export.js'
import { GrantParamsSchema } from '../../../schemas/authorization-grants.js'
import { NameSchema, PasswordSchema } from '../../../schemas/user.js'
import { PasskeyNameSchema, RegistrationCredentialSchema, RegistrationOptionsResponseSchema } from '../../../schemas/passkeys.js'
import { ACCOUNT_PATH, AUTHORIZATION_SERVER_PATH, WEBAUTHN_SCRIPT_PATH } from '../../authorization-server/paths.js'
import { addressSection, identitiesSection, stepUpSection, twoStepSection } from '../../console/account-sign-in.js'
import { doneNotices, jsonField, PROOF, proofFields, ProofFormSchema, proofOf, TOKEN, TokenFormSchema } from '../../console/forms.js'
import { ACCOUNT_SCRIPT_PATH, button, consolePage, escapeHtml, field, paragraph, postForm, rowButton, sendPage, sessionTable, table } from '../../console/pages.js'
import { say } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'
import { callerOf } from '../../services/context.js'
import { COOKIE_OPTIONS, SESSION_COOKIE } from '../../console/session-cookies.js'

const HIDDEN = { hide: true }
/** Every signed-in person's own page, as the API's own routes (`/auth/...`, `/users/me`) are theirs. */
const SIGNED_IN = { access: 'bearer' as const }

const DONE = doneNotices({
  profile: 'profileSaved',
  password: 'passwordChanged',
  session: 'sessionEnded',
  application: 'applicationRevoked',
  passkey: 'passkeyAdded',
  email: 'addressChanged',
  totp: 'totpTurnedOff',
  identity: 'identityUnlinked',
  proved: 'provedItIsYou',
  codeSent: 'stepUpCodeSent'
})

const NameFormSchema = Type.Object({ ...TOKEN, name: NameSchema }, { additionalProperties: false })
const PasswordFormSchema = Type.Object({ ...TOKEN, ...PROOF, password: PasswordSchema }, {
  additionalProperties: false
})
const PasskeyFormSchema = Type.Object({
  ...TOKEN,
  ...PROOF,
  // The browser's answer as JSON, read and held to the API's schema below.
  response: Type.String({ minLength: 1, maxLength: 20_000 }),
  name: Type.Optional(Type.Union([Type.Literal(''), PasskeyNameSchema]))
}, { additionalProperties: false })

const SESSIONS_SHOWN = 50

/**
 * The account page (docs/console.md): every signed-in person's profile, address, password,
 * authenticator app, passkeys, linked providers, sessions, connected applications, data export
 * and deletion (the sign-in forms are account-sign-in.ts's), each change through the API's own
 * service and rules (a new password, a passkey and deletion are sensitive changes: their proof is
 * asked on the page).
 */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, sessions, authorizationGrants, accountExport, accountDeletion, passkeys } = fastify.services
  const { accountSupport, federation, reauthentication } = fastify.services
  /** A form's route: any signed-in person, the page's token checked before anything else. */
  const form = { config: SIGNED_IN, preValidation: fastify.csrfProtection }

  fastify.get('', { config: { ...SIGNED_IN, consoleScripts: true }, schema: { ...HIDDEN, querystring: DONE.schema } }, async (request, reply) => {
    const context = request.serviceContext
    const me = callerOf(context).id
    const [viewer, live, current, grants, keys, methods, identities, offers] = await Promise.all([
      viewerOf(accounts, request, reply),
      sessions.list(context, { limit: SESSIONS_SHOWN, sort: ['-last_used_at'] }),
      sessions.currentOf(context),
      authorizationGrants.list(context),
      passkeys.list(context, { limit: SESSIONS_SHOWN }),
      accountSupport.signInMethodsOf(context, me),
      federation.identities(context),
      reauthentication.offers(context)
    ])
    const done = DONE.notice(request.query.done)
    const profile = `<h2>${escapeHtml(say('profile'))}</h2>${postForm(`${ACCOUNT_PATH}/profile`, viewer.csrf,
      `${field('name', 'name', viewer.name, 'required minlength="2" maxlength="100" autocomplete="name"')}${button('saveName')}`)}`
    const password = `<h2>${escapeHtml(say('password'))}</h2>${paragraph(say('passwordIntro'))}${postForm(`${ACCOUNT_PATH}/password`, viewer.csrf,
      proofFields() +
      `${field('newPassword', 'password', '', 'type="password" required minlength="8" autocomplete="new-password"')}${button('changePassword')}`)}`
    const sessionList = sessionTable(live.data, (session, device) => session.id === current
      ? escapeHtml(say('thisSession'))
      : postForm(`${ACCOUNT_PATH}/sessions/${session.id ?? ''}/end`, viewer.csrf, rowButton('endSession', say('endSessionOf', device))))
    const grantRows = grants.map((grant) => [
      escapeHtml(grant.client_name === '' ? grant.client_id : grant.client_name),
      escapeHtml(grant.scopes.join(' ')),
      escapeHtml(grant.granted_at),
      postForm(`${ACCOUNT_PATH}/applications/${grant.id}/revoke`, viewer.csrf,
        rowButton('revoke', say('revokeApplication', grant.client_name === '' ? grant.client_id : grant.client_name)))
    ])
    const applications = grantRows.length === 0 ? paragraph(say('noApplications')) : table(say('applications'), ['application', 'scopes', 'grantedAt', 'revoke'], grantRows)
    const passkeyRows = keys.data.map((key) => [escapeHtml(key.name ?? ''), escapeHtml(key.created_at ?? '')])
    const passkeyList = passkeyRows.length === 0 ? paragraph(say('noPasskeys')) : table(say('passkeys'), ['passkeyName', 'created'], passkeyRows)
    const passkeyForm = `<p id="passkey-needs-script">${escapeHtml(say('passkeyNeedsScript'))}</p>
<form id="passkey-form" method="post" action="${ACCOUNT_PATH}/passkeys" data-options="${ACCOUNT_PATH}/passkeys/options" hidden>
<input type="hidden" name="_csrf" value="${escapeHtml(viewer.csrf)}"><input type="hidden" name="response" value="">
${paragraph(say('passkeyIntro'))}${field('passkeyName', 'name', '', 'maxlength="100"')}
${proofFields()}${button('addPasskey')}
<p id="passkey-problem" class="error" role="alert" hidden>${escapeHtml(say('passkeyProblem'))}</p></form>`
    const passkeySection = `<h2>${escapeHtml(say('passkeys'))}</h2>${passkeyList}${passkeyForm}`
    const data = `<h2>${escapeHtml(say('yourData'))}</h2><p><a href="${ACCOUNT_PATH}/export" download>${escapeHtml(say('downloadExport'))}</a></p>`
    const deletion = `<h2>${escapeHtml(say('deleteAccount'))}</h2>${paragraph(say('deleteIntro'))}${postForm(`${ACCOUNT_PATH}/deletion`, viewer.csrf,
      `${proofFields()}${button('deleteAccount')}`)}`
    const body = `${done}${profile}${stepUpSection(offers, viewer.csrf)}${addressSection(viewer.email, viewer.csrf)}${password}${twoStepSection(methods, viewer.csrf)}${passkeySection}` +
      `${identitiesSection(identities, viewer.csrf)}<h2>${escapeHtml(say('sessions'))}</h2>${sessionList}` +
      `<h2>${escapeHtml(say('applications'))}</h2>${applications}${data}${deletion}`
    return sendPage(reply, 200, consolePage(say('yourAccount'), body, viewer, [`${AUTHORIZATION_SERVER_PATH}${WEBAUTHN_SCRIPT_PATH}`, ACCOUNT_SCRIPT_PATH]))
  })

  fastify.post('/profile', {
    ...form, schema: { ...HIDDEN, body: NameFormSchema }
  }, async (request, reply) => {
    await accounts.update(request.serviceContext, callerOf(request.serviceContext).id, { name: request.body.name })
    return await reply.redirect(`${ACCOUNT_PATH}?done=profile`, 303)
  })

  fastify.post('/password', {
    ...form, schema: { ...HIDDEN, body: PasswordFormSchema }
  }, async (request, reply) => {
    const changes = { password: request.body.password, ...proofOf(request.body) }
    await accounts.update(request.serviceContext, callerOf(request.serviceContext).id, changes)
    return await reply.redirect(`${ACCOUNT_PATH}?done=password`, 303)
  })

  fastify.post('/sessions/:id/end', {
    ...form, schema: { ...HIDDEN, params: IdParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await sessions.end(request.serviceContext, request.params.id)
    return await reply.redirect(`${ACCOUNT_PATH}?done=session`, 303)
  })

  fastify.post('/applications/:id/revoke', {
    ...form, schema: { ...HIDDEN, params: GrantParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await authorizationGrants.revoke(request.serviceContext, request.params.id)
    return await reply.redirect(`${ACCOUNT_PATH}?done=application`, 303)
  })

  // The form's token comes in a header: the page's script asks, as the API's registration options route answers.
  fastify.post('/passkeys/options', {
    ...form, schema: { ...HIDDEN, response: { 200: RegistrationOptionsResponseSchema } }
  }, async (request) => ({ data: await passkeys.registrationOptions(request.serviceContext) }))

  fastify.post('/passkeys', {
    ...form, schema: { ...HIDDEN, body: PasskeyFormSchema }
  }, async (request, reply) => {
    const { response, name } = request.body
    await passkeys.register(request.serviceContext, {
      response: jsonField(RegistrationCredentialSchema, response, 'response'), ...(name !== undefined && name !== '' && { name }), ...proofOf(request.body)
    })
    return await reply.redirect(`${ACCOUNT_PATH}?done=passkey`, 303)
  })

  // As DELETE /users/me: at once, or suspended until the grace period ends; the session ends either way.
  fastify.post('/deletion', { ...form, schema: { ...HIDDEN, body: ProofFormSchema } }, async (request, reply) => {
    const scheduled = await accountDeletion.deleteOwn(request.serviceContext, proofOf(request.body))
    reply.clearCookie(SESSION_COOKIE, COOKIE_OPTIONS)
    const said = scheduled === null ? say('accountDeleted') : say('deletionScheduled', scheduled.deletion_due_at)
    return sendPage(reply, 200, consolePage(say('deleteAccount'), paragraph(said, 'notice'), null))
  })

  // Serialized by the API's schema of the export, as GET /users/me/export is: nothing else can leave.
  fastify.get('/export', { config: SIGNED_IN, schema: { ...HIDDEN, response: { 200: AccountExportResponseSchema } } }, async (request, reply) => {
    const data = await accountExport.export(request.serviceContext)
    return await reply.header('cache-control', 'no-store').header('content-disposition', 'attachment; filename="account-export.json"').send({ data })
  })
}

export default account
