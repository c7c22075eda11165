import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Overview, OVERVIEW_COUNT_CAP } from '../../../schemas/overview.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { consolePage, escapeHtml, sendPage } from '../../console/pages.js'
import { say, type StringKey } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'

/** A count as the overview gives it: one at its cap is "at least". */
function shown (count: number): string {
  return count >= OVERVIEW_COUNT_CAP ? say('atLeast', String(OVERVIEW_COUNT_CAP)) : String(count)
}

/** A list of facts: each a label, a count (or text), and optionally where to look further. */
function facts (heading: StringKey, items: Array<[StringKey, string, string?]>): string {
  const rows = items.map(([label, value, href]) =>
    `<dt>${escapeHtml(say(label))}</dt><dd>${href === undefined ? escapeHtml(value) : `<a href="${escapeHtml(href)}">${escapeHtml(value)}</a>`}</dd>`)
  return `<h2>${escapeHtml(say(heading))}</h2><dl>${rows.join('\n')}</dl>`
}

function operations ({ webhooks, outbox }: Overview): string {
  if (webhooks === null || outbox === null) return ''
  return `${facts('webhooks', [
    ['endpointsDisabled', shown(webhooks.endpoints_disabled), `${CONSOLE_PATH}/webhooks`],
    ['endpointsRetrying', shown(webhooks.endpoints_retrying)],
    ['deliveriesRetrying', shown(webhooks.deliveries_retrying)],
    ['deliveriesOverdue', shown(webhooks.deliveries_overdue)]
  ])}${facts('outbox', [
    ['messagesOverdue', shown(outbox.overdue)],
    ['overdueSince', outbox.due_since ?? say('none')]
  ])}`
}

/**
 * The overview screen of the console (docs/console.md): `GET /overview`'s counts, each linked to
 * where an operator looks next.
 */
const overview: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, overview: service } = fastify.services
  const auditLog = `${CONSOLE_PATH}/audit-log`

  // As the API's route: `view_audit_logs`, an admin operation.
  fastify.get('', {
    config: { access: { permission: 'view_audit_logs' }, adminOperation: true },
    schema: { hide: true }
  }, async (request, reply) => {
    const [viewer, read] = await Promise.all([viewerOf(accounts, request, reply), service.read(request.serviceContext)])
    const signIns = facts('lastDay', [
      ['signInsSucceeded', shown(read.sign_ins.succeeded), `${auditLog}?event=auth.login`],
      ['signInsFailed', shown(read.sign_ins.failed), `${auditLog}?event=auth.login_failed`],
      ['secondFactorsFailed', shown(read.sign_ins.second_factor_failed), `${auditLog}?event=auth.mfa_failed`],
      ['lockedAccounts', shown(read.locked_accounts)]
    ])
    const body = `<p>${escapeHtml(say('overviewAt', read.at))}</p>${signIns}${operations(read)}`
    return sendPage(reply, 200, consolePage(say('overview'), body, viewer))
  })
}

export default overview
