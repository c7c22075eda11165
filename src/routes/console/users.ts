import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type SignInMethods, UserSessionParamsSchema } from '../../../schemas/account-support.js'
import { IdParamsSchema } from '../../../schemas/common.js'
import { SuspensionCreateSchema } from '../../../schemas/suspension.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import {
  button, consolePage, escapeHtml, field, link, pageLinks, paragraph, postForm, rowButton, searchForm, sendPage,
  sessionTable, table
} from '../../console/pages.js'
import { doneNotices, ListQuerySchema, proofFields, ProofFormSchema, proofOf, TOKEN, TokenFormSchema } from '../../console/forms.js'
import { say } from '../../console/strings.js'
import { OPERATOR_PERMISSION, unlessRefused, viewerOf } from '../../console/viewer.js'
import { hasPermission } from '../../security/permissions.js'
import { callerOf } from '../../services/context.js'

const HIDDEN = { hide: true }
const OPERATORS = { access: { permission: OPERATOR_PERMISSION } }
/** Suspending is what the API's route needs: `manage_users`, an admin operation. */
const MANAGE_USERS = { access: { permission: 'manage_users' as const }, adminOperation: true }

/** What a form on a user's page did, as the page after it says. */
const DONE = doneNotices({
  suspended: 'suspended', lifted: 'suspensionLifted', session: 'sessionEnded', mfa: 'mfaReset'
})

const SuspendFormSchema = Type.Object({
  ...TOKEN,
  reason: SuspensionCreateSchema.properties.reason,
  // A datetime-local field: no zone, read as UTC; empty: until lifted.
  until: Type.Optional(Type.Union([Type.Literal(''), Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$' })]))
}, { additionalProperties: false })

const PAGE_SIZE = 25

const SESSIONS_SHOWN = 50

/** How the account signs in, and the reset of its second factors when it has any. */
function signInSection (userId: string, methods: SignInMethods, csrf: string): string {
  const on = (value: boolean) => escapeHtml(say(value ? 'yes' : 'no'))
  const first = (factor: SignInMethods['first_factors'][number]) => on(methods.first_factors.includes(factor))
  const second = (factor: SignInMethods['second_factors'][number]) => on(methods.second_factors.includes(factor))
  const providers = methods.identity_providers.length === 0 ? say('noRoles') : methods.identity_providers.join(', ')
  const facts = `<dl><dt>${escapeHtml(say('password'))}</dt><dd>${first('password')}</dd>
<dt>${escapeHtml(say('passkeys'))}</dt><dd>${first('passkey')}</dd>
<dt>${escapeHtml(say('identityProviders'))}</dt><dd>${escapeHtml(providers)}</dd>
<dt>${escapeHtml(say('totp'))}</dt><dd>${second('totp')}</dd>
<dt>${escapeHtml(say('backupCodesLeft'))}</dt><dd>${methods.backup_codes_left}</dd>
<dt>${escapeHtml(say('emailCodes'))}</dt><dd>${second('email')}</dd>
<dt>${escapeHtml(say('smsCodes'))}</dt><dd>${second('sms')}</dd></dl>`
  const reset = methods.second_factors.length > 0
    ? `${paragraph(say('mfaResetIntro'))}${postForm(`${CONSOLE_PATH}/users/${userId}/mfa/reset`, csrf, `${proofFields()}${button('resetMfa')}`)}`
    : ''
  return `<h2>${escapeHtml(say('signInMethods'))}</h2>${facts}${reset}`
}

/**
 * The users screens of the console (docs/console.md): search, a user's page with its
 * suspension, its sign-in methods and their reset, its sessions and their ending.
 */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, roles, suspensions, accountSupport } = fastify.services

  const viewerFor = async (request: FastifyRequest, reply: FastifyReply) => await viewerOf(accounts, request, reply)

  fastify.get('', { config: OPERATORS, schema: { ...HIDDEN, querystring: ListQuerySchema } }, async (request, reply) => {
    const search = request.query.search?.trim() ?? ''
    // An address is looked up exactly (its index); anything else searches names, a page at a time.
    const page = search.includes('@')
      ? { data: [await accounts.findByAddress(search)].filter((user) => user !== null), meta: { kind: 'offset' as const } }
      : await accounts.list({ limit: PAGE_SIZE, cursor: request.query.cursor ?? '', ...(search !== '' && { search }), sort: ['-created_at'] })
    const rows = page.data.map((user) => [
      `<a href="${CONSOLE_PATH}/users/${escapeHtml(user.id)}">${escapeHtml(user.name ?? '')}</a>`,
      escapeHtml(user.email ?? ''),
      escapeHtml(say(user.email_verified === true ? 'yes' : 'no')),
      escapeHtml(user.created_at ?? '')
    ])
    const listing = rows.length === 0 ? paragraph(say('noUsers')) : table(say('users'), ['name', 'email', 'verified', 'created'], rows)
    const pages = pageLinks(`${CONSOLE_PATH}/users`, search, request.query.cursor ?? '', page.meta.kind === 'cursor' ? page.meta.nextCursor : null)
    const body = `${searchForm(`${CONSOLE_PATH}/users`, 'searchUsers', search)}${listing}${pages}`
    return sendPage(reply, 200, consolePage(say('users'), body, await viewerFor(request, reply)))
  })

  fastify.get('/:id', { config: OPERATORS, schema: { ...HIDDEN, params: IdParamsSchema, querystring: DONE.schema } }, async (request, reply) => {
    const { id } = request.params
    const context = request.serviceContext
    // Suspension, sign-in and sessions are read and changed by holders of manage_users only, as the API's routes are.
    const managesUsers = hasPermission(callerOf(context), 'manage_users')
    const [user, assignment, suspension, methods, live] = await Promise.all([
      accounts.get(id), roles.assignment(id),
      managesUsers ? suspensions.inForce(id) : null,
      managesUsers ? unlessRefused(accountSupport.signInMethodsOf(context, id)) : null,
      managesUsers ? unlessRefused(accountSupport.sessionsOf(context, id, { limit: SESSIONS_SHOWN, sort: ['-last_used_at'] })) : null
    ])
    const viewer = await viewerFor(request, reply)
    const status = suspension === null
      ? say('active')
      : suspension.until === null ? say('suspendedSince', suspension.at) : say('suspendedUntil', suspension.at, suspension.until)
    const facts = `<dl><dt>${escapeHtml(say('name'))}</dt><dd>${escapeHtml(user.name)}</dd>
<dt>${escapeHtml(say('email'))}</dt><dd>${escapeHtml(user.email)}</dd>
<dt>${escapeHtml(say('verified'))}</dt><dd>${escapeHtml(say(user.email_verified ? 'yes' : 'no'))}</dd>
<dt>${escapeHtml(say('created'))}</dt><dd>${escapeHtml(user.created_at)}</dd>
<dt>${escapeHtml(say('roles'))}</dt><dd>${escapeHtml(assignment.roles.length === 0 ? say('noRoles') : assignment.roles.join(', '))}</dd>
${managesUsers ? `<dt>${escapeHtml(say('status'))}</dt><dd>${escapeHtml(status)}</dd>` : ''}</dl>`
    const done = DONE.notice(request.query.done)
    const action = `${CONSOLE_PATH}/users/${id}/suspension`
    const suspensionForms = !managesUsers
      ? paragraph(say('manageUsersOnly'))
      : suspension === null
        ? `<h2>${escapeHtml(say('suspend'))}</h2>${postForm(action, viewer.csrf, `${field('suspendReason', 'reason', '', 'required maxlength="500"')}${field('suspendUntil', 'until', '', 'type="datetime-local"')}${button('suspend')}`)}`
        : postForm(`${action}/lift`, viewer.csrf, button('liftSuspension'))
    const sessionsSection = live === null
      ? ''
      : `<h2>${escapeHtml(say('sessions'))}</h2>${live.data.length === 0
        ? paragraph(say('noSessions'))
        : sessionTable(live.data, (session, device) =>
          postForm(`${CONSOLE_PATH}/users/${id}/sessions/${session.id ?? ''}/end`, viewer.csrf, rowButton('endSession', say('endSessionOf', device))))}`
    const signIn = !managesUsers ? '' : methods === null ? paragraph(say('outranked')) : signInSection(id, methods, viewer.csrf)
    const actAs = hasPermission(callerOf(context), 'impersonate_users') && !viewer.acting
      ? `<h2>${escapeHtml(say('impersonate'))}</h2>${paragraph(say('impersonateIntro'))}${postForm(`${CONSOLE_PATH}/users/${id}/impersonation`, viewer.csrf,
        `${field('impersonationReason', 'reason', '', 'required minlength="3" maxlength="500"')}${button('impersonate')}`)}`
      : ''
    const trail = viewer.screens.auditLog ? `<p>${link(`${CONSOLE_PATH}/audit-log?actor_id=${encodeURIComponent(id)}`, 'auditTrail')}</p>` : ''
    const body = `${done}${facts}${suspensionForms}${signIn}${sessionsSection}${actAs}${trail}<p>${link(`${CONSOLE_PATH}/users`, 'backToUsers')}</p>`
    return sendPage(reply, 200, consolePage(user.name === '' ? say('user') : user.name, body, viewer))
  })

  fastify.post('/:id/suspension', {
    config: MANAGE_USERS,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: IdParamsSchema, body: SuspendFormSchema }
  }, async (request, reply) => {
    const { reason, until } = request.body
    await suspensions.suspend(request.serviceContext, request.params.id, { reason, ...(until !== undefined && until !== '' && { until: `${until.length === 16 ? `${until}:00` : until}Z` }) })
    return await reply.redirect(`${CONSOLE_PATH}/users/${request.params.id}?done=suspended`, 303)
  })

  fastify.post('/:id/suspension/lift', {
    config: MANAGE_USERS,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: IdParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await suspensions.lift(request.serviceContext, request.params.id)
    return await reply.redirect(`${CONSOLE_PATH}/users/${request.params.id}?done=lifted`, 303)
  })

  fastify.post('/:id/sessions/:sessionId/end', {
    config: MANAGE_USERS,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: UserSessionParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await accountSupport.endSession(request.serviceContext, request.params.id, request.params.sessionId)
    return await reply.redirect(`${CONSOLE_PATH}/users/${request.params.id}?done=session`, 303)
  })

  fastify.post('/:id/mfa/reset', {
    config: MANAGE_USERS,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: IdParamsSchema, body: ProofFormSchema }
  }, async (request, reply) => {
    await accountSupport.resetMfa(request.serviceContext, request.params.id, proofOf(request.body))
    return await reply.redirect(`${CONSOLE_PATH}/users/${request.params.id}?done=mfa`, 303)
  })
}

export default users
