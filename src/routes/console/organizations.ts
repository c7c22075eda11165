import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { IdParamsSchema } from '../../../schemas/common.js'
import {
  InvitationCreateSchema, InvitationParamsSchema, MemberParamsSchema, ORGANIZATION_ROLES, type OrganizationRole,
  OrganizationRoleSchema
} from '../../../schemas/organizations.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { doneNotices, ListQuerySchema, TOKEN, TokenFormSchema } from '../../console/forms.js'
import {
  button, consolePage, escapeHtml, field, link, pageLinks, paragraph, postForm, rowButton, searchForm, sendPage, table
} from '../../console/pages.js'
import { say } from '../../console/strings.js'
import { OPERATOR_PERMISSION, unlessRefused, viewerOf } from '../../console/viewer.js'
import { actingPermissions } from '../../security/organization-permissions.js'

const HIDDEN = { hide: true }
const PAGE_SIZE = 25
const SHOWN = 50
const BASE = `${CONSOLE_PATH}/organizations`

/** Each screen and form needs what its API route declares: an organization permission, through the role there. */
const orgAccess = (permission: 'org:read' | 'members:update' | 'members:remove' | 'members:invite') =>
  ({ access: { organization: 'id', permission } as const })

const DONE = doneNotices({
  role: 'memberRoleChanged', removed: 'memberRemoved', invited: 'invitationSent', withdrawn: 'invitationWithdrawn'
})

const RoleFormSchema = Type.Object({ ...TOKEN, role: OrganizationRoleSchema }, { additionalProperties: false })
const InviteFormSchema = Type.Object({ ...TOKEN, ...InvitationCreateSchema.properties }, {
  additionalProperties: false
})

/** A role's select; in a table's row its label is for screen readers only (the column names it). */
function roleSelect (label: string, selected: OrganizationRole, inRow = false): string {
  const options = ORGANIZATION_ROLES.map((role) =>
    `<option value="${role}"${role === selected ? ' selected' : ''}>${role}</option>`).join('')
  const text = inRow ? `<span class="skip">${escapeHtml(label)}</span>` : escapeHtml(label)
  return `<label>${text} <select name="role">${options}</select></label>`
}

/**
 * The organizations screens of the console (docs/console.md): the organizations the viewer may
 * see (every one for a global administrator, as the API lists them), and an organization's page
 * with its members and invitations, each change through the API's own service and guard.
 */
const organizations: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, organizations: service, invitations } = fastify.services

  fastify.get('', { config: { access: { permission: OPERATOR_PERMISSION } }, schema: { ...HIDDEN, querystring: ListQuerySchema } }, async (request, reply) => {
    const search = request.query.search?.trim() ?? ''
    const [viewer, page] = await Promise.all([
      viewerOf(accounts, request, reply),
      service.list(request.serviceContext, { limit: PAGE_SIZE, cursor: request.query.cursor ?? '', sort: ['-created_at'], ...(search !== '' && { search }) })
    ])
    const rows = page.data.map((organization) => [
      `<a href="${BASE}/${escapeHtml(organization.id ?? '')}">${escapeHtml(organization.name ?? '')}</a>`,
      escapeHtml(organization.slug ?? ''),
      escapeHtml(organization.role ?? say('notAMember')),
      escapeHtml(organization.created_at ?? '')
    ])
    const listing = rows.length === 0 ? paragraph(say('noOrganizations')) : table(say('organizations'), ['name', 'slug', 'yourRole', 'created'], rows)
    const pages = pageLinks(BASE, search, request.query.cursor ?? '', page.meta.kind === 'cursor' ? page.meta.nextCursor : null)
    return sendPage(reply, 200, consolePage(say('organizations'), `${searchForm(BASE, 'searchOrganizations', search)}${listing}${pages}`, viewer))
  })

  fastify.get('/:id', { config: orgAccess('org:read'), schema: { ...HIDDEN, params: IdParamsSchema, querystring: DONE.schema } }, async (request, reply) => {
    const { id } = request.params
    const context = request.serviceContext
    // What the viewer may do here: the permissions of the role the guard found them acting with.
    const may = actingPermissions(request.organizationStanding?.role ?? null)
    const [viewer, organization, members, pending] = await Promise.all([
      viewerOf(accounts, request, reply),
      service.get(context, id),
      service.listMembers(context, id, { limit: SHOWN }),
      may.includes('members:invite') ? unlessRefused(invitations.list(context, id, { limit: SHOWN, sort: ['-created_at'] })) : null
    ])
    const base = `${BASE}/${id}`
    const memberRows = members.data.map((member) => {
      const who = member.name === undefined || member.name === '' ? member.email ?? '' : member.name
      const change = may.includes('members:update')
        ? postForm(`${base}/members/${member.id}/role`, viewer.csrf, `${roleSelect(say('roleOf', who), member.role ?? 'member', true)}${rowButton('changeRole', say('changeRoleOf', who))}`, 'inline')
        : escapeHtml(member.role ?? '')
      const remove = may.includes('members:remove')
        ? postForm(`${base}/members/${member.id}/remove`, viewer.csrf, rowButton('removeMember', say('removeMemberNamed', who)))
        : ''
      return [escapeHtml(member.name ?? ''), escapeHtml(member.email ?? ''), change, escapeHtml(member.created_at ?? ''), remove]
    })
    const facts = `<dl><dt>${escapeHtml(say('name'))}</dt><dd>${escapeHtml(organization.name)}</dd>
<dt>${escapeHtml(say('slug'))}</dt><dd>${escapeHtml(organization.slug)}</dd>
<dt>${escapeHtml(say('yourRole'))}</dt><dd>${escapeHtml(organization.role ?? say('notAMember'))}</dd></dl>`
    const memberSection = `<h2>${escapeHtml(say('members'))}</h2>${memberRows.length === 0
      ? paragraph(say('noMembers'))
      : table(say('members'), ['name', 'email', 'role', 'joined', 'remove'], memberRows)}`
    const invitationSection = pending === null
      ? ''
      : `<h2>${escapeHtml(say('invitations'))}</h2>${pending.data.length === 0
        ? paragraph(say('noInvitations'))
        : table(say('invitations'), ['email', 'role', 'expires', 'withdraw'], pending.data.map((invitation) => [
          escapeHtml(invitation.email ?? ''),
          escapeHtml(invitation.role ?? ''),
          escapeHtml(invitation.expires_at ?? ''),
          postForm(`${base}/invitations/${invitation.id}/withdraw`, viewer.csrf, rowButton('withdraw', say('withdrawInvitationTo', invitation.email ?? '')))
        ]))}
<h3>${escapeHtml(say('invite'))}</h3>${postForm(`${base}/invitations`, viewer.csrf,
  `${field('email', 'email', '', 'type="email" required maxlength="254"')}${roleSelect(say('role'), 'member')}${button('invite')}`)}`
    const done = DONE.notice(request.query.done)
    const body = `${done}${facts}${memberSection}${invitationSection}<p>${link(BASE, 'backToOrganizations')}</p>`
    return sendPage(reply, 200, consolePage(organization.name, body, viewer))
  })

  fastify.post('/:id/members/:userId/role', {
    config: orgAccess('members:update'), preValidation: fastify.csrfProtection, schema: { ...HIDDEN, params: MemberParamsSchema, body: RoleFormSchema }
  }, async (request, reply) => {
    await service.updateMember(request.serviceContext, request.params.id, request.params.userId, request.body.role)
    return await reply.redirect(`${BASE}/${request.params.id}?done=role`, 303)
  })

  fastify.post('/:id/members/:userId/remove', {
    config: orgAccess('members:remove'), preValidation: fastify.csrfProtection, schema: { ...HIDDEN, params: MemberParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await service.removeMember(request.serviceContext, request.params.id, request.params.userId)
    return await reply.redirect(`${BASE}/${request.params.id}?done=removed`, 303)
  })

  fastify.post('/:id/invitations', {
    config: orgAccess('members:invite'), preValidation: fastify.csrfProtection, schema: { ...HIDDEN, params: IdParamsSchema, body: InviteFormSchema }
  }, async (request, reply) => {
    const { email, role } = request.body
    await invitations.invite(request.serviceContext, request.params.id, { email, role })
    return await reply.redirect(`${BASE}/${request.params.id}?done=invited`, 303)
  })

  fastify.post('/:id/invitations/:invitationId/withdraw', {
    config: orgAccess('members:invite'), preValidation: fastify.csrfProtection, schema: { ...HIDDEN, params: InvitationParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await invitations.revoke(request.serviceContext, request.params.id, request.params.invitationId)
    return await reply.redirect(`${BASE}/${request.params.id}?done=withdrawn`, 303)
  })
}

export default organizations
