import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { IdParamsSchema, IdSchema } from '../../../schemas/common.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { consolePage, escapeHtml, link, paragraph, postForm, sendPage, table } from '../../console/pages.js'
import { TokenFormSchema } from '../../console/forms.js'
import { say } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'

const HIDDEN = { hide: true }
/** As the API's webhook routes: the `admin` permission (super_admin only). */
const ADMIN = { access: { permission: 'admin' as const } }
const SHOWN = 50

const DeliveryParamsSchema = Type.Object({ id: IdSchema, deliveryId: IdSchema }, { additionalProperties: false })
const EndpointQuerySchema = Type.Object({ done: Type.Optional(Type.Literal('retried')) }, { additionalProperties: false })

/** The webhooks screens of the console (docs/console.md): endpoints, their deliveries and attempts, a retry. */
const webhooks: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, webhooks: service } = fastify.services
  const base = `${CONSOLE_PATH}/webhooks`

  fastify.get('', { config: ADMIN, schema: HIDDEN }, async (request, reply) => {
    const [viewer, page] = await Promise.all([viewerOf(accounts, request, reply), service.list({ limit: SHOWN, cursor: '' })])
    const rows = page.data.map((endpoint) => [
      `<a href="${base}/${escapeHtml(endpoint.id)}">${escapeHtml(endpoint.url ?? '')}</a>`,
      escapeHtml((endpoint.events ?? []).join(', ')),
      escapeHtml(endpoint.enabled === true ? say('yes') : say(endpoint.disabled_reason === 'failing' ? 'disabledFailing' : 'disabledManual'))
    ])
    const body = rows.length === 0 ? paragraph(say('noWebhooks')) : table(say('webhooks'), ['url', 'events', 'enabled'], rows)
    return sendPage(reply, 200, consolePage(say('webhooks'), `${paragraph(say('superAdminOnly'))}${body}`, viewer))
  })

  fastify.get('/:id', { config: ADMIN, schema: { ...HIDDEN, params: IdParamsSchema, querystring: EndpointQuerySchema } }, async (request, reply) => {
    const { id } = request.params
    const [viewer, endpoint, deliveries] = await Promise.all([
      viewerOf(accounts, request, reply), service.get(id), service.deliveries(id, { limit: SHOWN, cursor: '' })
    ])
    const rows = deliveries.data.map((delivery) => [
      escapeHtml(delivery.event_type ?? ''),
      escapeHtml(delivery.status ?? ''),
      escapeHtml(String(delivery.attempts ?? 0)),
      escapeHtml(delivery.last_status == null ? '' : String(delivery.last_status)),
      escapeHtml(delivery.last_error ?? ''),
      escapeHtml(delivery.next_attempt_at ?? ''),
      escapeHtml(delivery.created_at ?? ''),
      delivery.status === 'failed'
        ? postForm(`${base}/${id}/deliveries/${delivery.id}/retry`, viewer.csrf,
          `<button type="submit" class="secondary" aria-label="${escapeHtml(say('retryDelivery', `${delivery.event_type ?? ''} ${delivery.created_at ?? ''}`))}">${escapeHtml(say('retry'))}</button>`)
        : ''
    ])
    const facts = `<dl><dt>${escapeHtml(say('url'))}</dt><dd>${escapeHtml(endpoint.url)}</dd>
<dt>${escapeHtml(say('events'))}</dt><dd>${escapeHtml(endpoint.events.join(', '))}</dd>
<dt>${escapeHtml(say('enabled'))}</dt><dd>${escapeHtml(endpoint.enabled ? say('yes') : say(endpoint.disabled_reason === 'failing' ? 'disabledFailing' : 'disabledManual'))}</dd></dl>`
    const done = request.query.done === undefined ? '' : paragraph(say('retried'), 'notice')
    const listing = rows.length === 0
      ? paragraph(say('noDeliveries'))
      : table(say('deliveries'), ['event', 'status', 'attempts', 'lastStatus', 'lastError', 'nextAttempt', 'created', 'retry'], rows)
    const body = `${done}${facts}<h2>${escapeHtml(say('deliveries'))}</h2>${listing}<p>${link(base, 'backToWebhooks')}</p>`
    return sendPage(reply, 200, consolePage(say('endpoint'), body, viewer))
  })

  fastify.post('/:id/deliveries/:deliveryId/retry', {
    config: ADMIN,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: DeliveryParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    await service.retry(request.serviceContext, request.params.id, request.params.deliveryId)
    return await reply.redirect(`${base}/${request.params.id}?done=retried`, 303)
  })
}

export default webhooks
