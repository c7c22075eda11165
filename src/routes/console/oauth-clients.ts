import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { OAUTH_GRANT_TYPES, OAuthClientCreateSchema, OAuthClientParamsSchema, type OAuthClientWithSecret } from '../../../schemas/oauth-clients.js'
import { CONSOLE_PATH } from '../../authorization-server/paths.js'
import { button, consolePage, escapeHtml, field, link, paragraph, postForm, sendPage, table } from '../../console/pages.js'
import { TokenFormSchema } from '../../console/forms.js'
import { say } from '../../console/strings.js'
import { viewerOf } from '../../console/viewer.js'

const HIDDEN = { hide: true }
/** As the API's routes of OAuth clients: the `admin` permission (super_admin only); changes are admin operations. */
const ADMIN = { access: { permission: 'admin' as const } }
const ADMIN_CHANGE = { ...ADMIN, adminOperation: true }
const SHOWN = 50

/** A posted form's fields as @fastify/formbody parses them: a field sent twice (checkboxes) is an array. */
type FormFields = Record<string, string | string[] | undefined>

/**
 * The registration form, read into the API's body (a checkbox is `on` or absent, lists are lines or
 * words), which the API's own schema then validates: the same rules as POST /api/v1/oauth-clients.
 */
function registrationOf (form: FormFields): Record<string, unknown> {
  const one = (name: string) => [form[name] ?? []].flat()[0] ?? ''
  const words = (text: string, separator: RegExp) => text.split(separator).map((item) => item.trim()).filter((item) => item !== '')
  return {
    name: one('name'),
    confidential: one('confidential') === 'on',
    redirect_uris: words(one('redirect_uris'), /\r?\n/),
    grant_types: [form.grant_types ?? []].flat(),
    scopes: words(one('scopes'), /\s+/)
  }
}

/** The OAuth clients screens (docs/console.md): the list, registration with its secret shown once, rotation. */
const oauthClients: FastifyPluginAsyncTypebox = async (fastify) => {
  const { accounts, oauthClients: service } = fastify.services
  const base = `${CONSOLE_PATH}/oauth-clients`

  /** The page showing a secret, the one time it is shown. */
  function secretPage (client: OAuthClientWithSecret): string {
    const shown = client.client_secret === null
      ? ''
      : `<dt>${escapeHtml(say('clientSecret'))}</dt><dd><code>${escapeHtml(client.client_secret)}</code></dd>`
    const notice = client.client_secret === null ? '' : paragraph(say('secretShownOnce'), 'notice')
    return `${notice}<dl><dt>${escapeHtml(say('clientId'))}</dt><dd><code>${escapeHtml(client.id)}</code></dd>${shown}</dl><p>${link(`${base}/${client.id}`, 'backToClients')}</p>`
  }

  fastify.get('', { config: ADMIN, schema: HIDDEN }, async (request, reply) => {
    const [viewer, page] = await Promise.all([viewerOf(accounts, request, reply), service.list({ limit: SHOWN, cursor: '' })])
    const rows = page.data.map((client) => [
      `<a href="${base}/${escapeHtml(client.id)}">${escapeHtml(client.name ?? '')}</a>`,
      escapeHtml(say(client.confidential === true ? 'confidential' : 'publicClient')),
      escapeHtml((client.grant_types ?? []).join(', '))
    ])
    const listing = rows.length === 0 ? paragraph(say('noOauthClients')) : table(say('oauthClients'), ['clientName', 'kind', 'grantTypes'], rows)
    const grantBoxes = OAUTH_GRANT_TYPES.map((grant) =>
      `<label class="choice"><input type="checkbox" name="grant_types" value="${escapeHtml(grant)}"${grant === 'authorization_code' ? ' checked' : ''}> ${escapeHtml(grant)}</label>`).join('')
    const form = postForm(base, viewer.csrf, `${field('clientName', 'name', '', 'required maxlength="100"')}
<label class="choice"><input type="checkbox" name="confidential" checked> ${escapeHtml(say('confidential'))}</label>
<label>${escapeHtml(say('redirectUris'))} <textarea name="redirect_uris" rows="3"></textarea></label>
<fieldset><legend>${escapeHtml(say('grantTypes'))}</legend>${grantBoxes}</fieldset>
${field('clientScopes', 'scopes', 'openid email profile')}${button('register')}`)
    const body = `${paragraph(say('superAdminOnly'))}${listing}<h2>${escapeHtml(say('registerClient'))}</h2>${form}`
    return sendPage(reply, 200, consolePage(say('oauthClients'), body, viewer))
  })

  fastify.post('', {
    config: ADMIN_CHANGE,
    preValidation: [fastify.csrfProtection, async (request: FastifyRequest) => {
      request.body = registrationOf(request.body as FormFields)
    }],
    schema: { ...HIDDEN, body: OAuthClientCreateSchema }
  }, async (request, reply) => {
    const client = await service.create(request.serviceContext, request.body)
    return sendPage(reply, 201, consolePage(client.name, secretPage(client), await viewerOf(accounts, request, reply)))
  })

  fastify.get('/:id', { config: ADMIN, schema: { ...HIDDEN, params: OAuthClientParamsSchema } }, async (request, reply) => {
    const [viewer, client] = await Promise.all([viewerOf(accounts, request, reply), service.get(request.params.id)])
    const facts = `<dl><dt>${escapeHtml(say('clientId'))}</dt><dd><code>${escapeHtml(client.id)}</code></dd>
<dt>${escapeHtml(say('kind'))}</dt><dd>${escapeHtml(say(client.confidential ? 'confidential' : 'publicClient'))}</dd>
<dt>${escapeHtml(say('redirectUris'))}</dt><dd>${client.redirect_uris.map((uri) => escapeHtml(uri)).join('<br>')}</dd>
<dt>${escapeHtml(say('grantTypes'))}</dt><dd>${escapeHtml(client.grant_types.join(', '))}</dd>
<dt>${escapeHtml(say('clientScopes'))}</dt><dd>${escapeHtml(client.scopes.join(' '))}</dd></dl>`
    const rotate = client.confidential
      ? `<h2>${escapeHtml(say('rotateSecret'))}</h2>${paragraph(say('rotateIntro'))}${postForm(`${base}/${client.id}/secret`, viewer.csrf, button('rotateSecret'))}`
      : ''
    return sendPage(reply, 200, consolePage(client.name, `${facts}${rotate}<p>${link(base, 'backToClients')}</p>`, viewer))
  })

  fastify.post('/:id/secret', {
    config: ADMIN_CHANGE,
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: OAuthClientParamsSchema, body: TokenFormSchema }
  }, async (request, reply) => {
    const client = await service.rotateSecret(request.serviceContext, request.params.id)
    return sendPage(reply, 200, consolePage(client.name, secretPage(client), await viewerOf(accounts, request, reply)))
  })
}

export default oauthClients
