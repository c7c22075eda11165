import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { IdParamsSchema } from '../../../schemas/common.js'
import { ImpersonationCreateSchema } from '../../../schemas/impersonation.js'
import { ACCOUNT_PATH, CONSOLE_PATH } from '../../authorization-server/paths.js'
import { TOKEN, TokenFormSchema } from '../../console/forms.js'
import { type ConsoleCookies, COOKIE_OPTIONS, SESSION_COOKIE } from '../../console/session-cookies.js'
import { callerOf } from '../../services/context.js'

const HIDDEN = { hide: true }

const ImpersonateFormSchema = Type.Object({
  ...TOKEN, reason: ImpersonationCreateSchema.properties.reason
}, { additionalProperties: false })

/**
 * Acting as a user from their page (docs/console.md, "Impersonation"): the API's impersonation,
 * its access token kept beside the operator's session in the console's cookie and borne instead
 * of it until it ends, by its time or by the operator's hand.
 */
const impersonation: FastifyPluginAsyncTypebox<{ cookies: ConsoleCookies }> = async (fastify, { cookies }) => {
  const { impersonations, signIn } = fastify.services

  fastify.post('/users/:id/impersonation', {
    config: { access: { permission: 'impersonate_users' }, adminOperation: true },
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, params: IdParamsSchema, body: ImpersonateFormSchema }
  }, async (request, reply) => {
    const grant = await impersonations.start(request.serviceContext, request.params.id, { reason: request.body.reason })
    const session = request.consoleSession
    if (session !== null) {
      reply.setCookie(SESSION_COOKIE, cookies.seal({ ...session, acting: grant.access_token }), COOKIE_OPTIONS)
    }
    return await reply.redirect(ACCOUNT_PATH, 303)
  })

  fastify.post('/impersonation/end', {
    config: { access: 'bearer', allowWithoutMfa: true },
    preValidation: fastify.csrfProtection,
    schema: { ...HIDDEN, body: TokenFormSchema }
  }, async (request, reply) => {
    const session = request.consoleSession
    if (session?.acting === undefined) return await reply.redirect(`${CONSOLE_PATH}/users`, 303)
    const { id } = callerOf(request.serviceContext)
    // As POST /auth/logout with the impersonation's token: that token is refused from now on.
    await signIn.signOut(request.serviceContext, undefined)
    reply.setCookie(SESSION_COOKIE, cookies.withoutActing(session), COOKIE_OPTIONS)
    return await reply.redirect(`${CONSOLE_PATH}/users/${id}`, 303)
  })
}

export default impersonation
