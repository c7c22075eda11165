import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { AUDIT_EVENTS, AuditFiltersSchema } from '../../../schemas/audit.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { button, consolePage, escapeHtml, field, link, paragraph, sendPage, table } from '../../console/pages.js'
import { say } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'

const PAGE_SIZE = 50

/** The API's filters of the audit log; an empty field of the form is no filter. */
const AuditLogQuerySchema = Type.Object({
  event: Type.Optional(Type.Union([Type.Literal(''), AuditFiltersSchema.event])),
  actor_id: Type.Optional(Type.Union([Type.Literal(''), AuditFiltersSchema.actor_id])),
  cursor: Type.Optional(Type.String({ maxLength: 1000 }))
}, { additionalProperties: false })

/** The audit log screen of the console (docs/console.md): newest first, by event and actor, cursor pages. */
const auditLog: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, auditLog: service } = fastify.services
  const base = `${CONSOLE_PATH}/audit-log`

  // As the API's route: `view_audit_logs`, and an admin operation (reading it is screened like one).
  fastify.get('', {
    config: { access: { permission: 'view_audit_logs' }, adminOperation: true },
    schema: { hide: true, querystring: AuditLogQuerySchema }
  }, async (request, reply) => {
    const { event = '', actor_id: actorId = '', cursor = '' } = request.query
    const filters = { ...(event !== '' && { event }), ...(actorId !== '' && { actor_id: actorId }) }
    const [viewer, page] = await Promise.all([
      viewerOf(accounts, request, reply),
      service.list({ limit: PAGE_SIZE, cursor, sort: ['-created_at'], ...filters })
    ])
    const rows = page.data.map((entry) => [
      escapeHtml(entry.created_at ?? ''),
      escapeHtml(entry.event ?? ''),
      escapeHtml(entry.outcome ?? ''),
      entry.actor_id == null ? '' : `<a href="${CONSOLE_PATH}/users/${escapeHtml(entry.actor_id)}">${escapeHtml(entry.actor_id)}</a>`,
      escapeHtml(entry.target_id ?? ''),
      escapeHtml(entry.ip ?? ''),
      escapeHtml(entry.user_agent ?? ''),
      `<code>${escapeHtml(JSON.stringify(entry.details ?? {}))}</code>`
    ])
    const options = ['', ...AUDIT_EVENTS].map((name) =>
      `<option value="${escapeHtml(name)}"${name === event ? ' selected' : ''}>${escapeHtml(name === '' ? say('anyEvent') : name)}</option>`).join('')
    const form = `<form method="get" action="${base}" class="inline" role="search"><label>${escapeHtml(say('event'))} <select name="event">${options}</select></label>
${field('actorId', 'actor_id', actorId, 'maxlength="64"')}${button('filter')}</form>`
    const listing = rows.length === 0
      ? paragraph(say('noEntries'))
      : table(say('auditLog'), ['time', 'event', 'outcome', 'actor', 'target', 'address', 'userAgent', 'details'], rows)
    const next = page.meta.kind === 'cursor' && page.meta.nextCursor !== null
      ? `<p>${link(`${base}?${new URLSearchParams({ ...filters, cursor: page.meta.nextCursor }).toString()}`, 'nextPage')}</p>`
      : ''
    return sendPage(reply, 200, consolePage(say('auditLog'), `${form}${listing}${next}`, viewer))
  })
}

export default auditLog
