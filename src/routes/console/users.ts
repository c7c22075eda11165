import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { IdParamsSchema } from '../../../schemas/common.js'
import { SuspensionCreateSchema } from '../../../schemas/suspension.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { button, consolePage, escapeHtml, field, link, paragraph, postForm, sendPage, table } from '../../console/pages.js'
import { say } from '../../console/strings.js'
import { OPERATOR_PERMISSION, viewerOf } from '../../console/viewer.js'
import { hasPermission } from '../../security/permissions.js'
import { callerOf } from '../../services/context.js'

const HIDDEN = { hide: true }
const OPERATORS = { access: { permission: OPERATOR_PERMISSION } }
/** Suspending is what the API's route needs: `manage_users`, an admin operation. */
const MANAGE_USERS = { access: { permission: 'manage_users' as const }, adminOperation: true }

const UsersQuerySchema = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 100 })),
  cursor: Type.Optional(Type.String({ maxLength: 1000 }))
}, { additionalProperties: false })

const UserPageQuerySchema = Type.Object({
  done: Type.Optional(Type.Union([Type.Literal('suspended'), Type.Literal('lifted')]))
}, { additionalProperties: false })

const FormTokenSchema = Type.Object({ _csrf: Type.String({ maxLength: 200 }) })
const SuspendFormSchema = Type.Object({
  _csrf: Type.String({ maxLength: 200 }),
  reason: SuspensionCreateSchema.properties.reason,
  // A datetime-local field: no zone, read as UTC; empty: until lifted.
  until: Type.Optional(Type.Union([Type.Literal(''), Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?$' })]))
}, { additionalProperties: false })

const PAGE_SIZE = 25

/** The users screens of the console (docs/console.md): search, a user's page, suspension. */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, roles, suspensions } = fastify.services

  const viewerFor = async (request: FastifyRequest, reply: FastifyReply) => await viewerOf(accounts, request, reply)

  fastify.get('', { config: OPERATORS, schema: { ...HIDDEN, querystring: UsersQuerySchema } }, async (request, reply) => {
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
    const searchForm = `<form method="get" action="${CONSOLE_PATH}/users" class="inline" role="search">${field('searchUsers', 'search', search, 'type="search" maxlength="100"')}${button('search')}</form>`
    const next = page.meta.kind === 'cursor' && page.meta.nextCursor !== null
      ? `<p>${link(`${CONSOLE_PATH}/users?${new URLSearchParams({ ...(search !== '' && { search }), cursor: page.meta.nextCursor }).toString()}`, 'nextPage')}</p>`
      : ''
    const first = request.query.cursor === undefined || request.query.cursor === '' ? '' : `<p>${link(`${CONSOLE_PATH}/users${search === '' ? '' : `?search=${encodeURIComponent(search)}`}`, 'firstPage')}</p>`
    const listing = rows.length === 0 ? paragraph(say('noUsers')) : table(say('users'), ['name', 'email', 'verified', 'created'], rows)
    return sendPage(reply, 200, consolePage(say('users'), `${searchForm}${listing}${next}${first}`, await viewerFor(request, reply)))
  })

  fastify.get('/:id', { config: OPERATORS, schema: { ...HIDDEN, params: IdParamsSchema, querystring: UserPageQuerySchema } }, async (request, reply) => {
    const { id } = request.params
    // Suspensions are read and changed by holders of manage_users only, as the API's routes are.
    const managesUsers = hasPermission(callerOf(request.serviceContext), 'manage_users')
    const [user, assignment, suspension] = await Promise.all([
      accounts.get(id), roles.assignment(id), managesUsers ? suspensions.inForce(id) : null
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
    const done = request.query.done === undefined ? '' : paragraph(say(request.query.done === 'suspended' ? 'suspended' : 'suspensionLifted'), 'notice')
    const action = `${CONSOLE_PATH}/users/${id}/suspension`
    const suspensionForms = !managesUsers
      ? paragraph(say('manageUsersOnly'))
      : suspension === null
        ? `<h2>${escapeHtml(say('suspend'))}</h2>${postForm(action, viewer.csrf, `${field('suspendReason', 'reason', '', 'required maxlength="500"')}${field('suspendUntil', 'until', '', 'type="datetime-local"')}${button('suspend')}`)}`
        : postForm(`${action}/lift`, viewer.csrf, button('liftSuspension'))
    const trail = viewer.screens.auditLog ? `<p>${link(`${CONSOLE_PATH}/audit-log?actor_id=${encodeURIComponent(id)}`, 'auditTrail')}</p>` : ''
    const body = `${done}${facts}${suspensionForms}${trail}<p>${link(`${CONSOLE_PATH}/users`, 'backToUsers')}</p>`
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
    schema: { ...HIDDEN, params: IdParamsSchema, body: FormTokenSchema }
  }, async (request, reply) => {
    await suspensions.lift(request.serviceContext, request.params.id)
    return await reply.redirect(`${CONSOLE_PATH}/users/${request.params.id}?done=lifted`, 303)
  })
}

export default users
