import formbody from '@fastify/formbody'
import type { FastifyPluginAsync } from 'fastify'
import { type FormBody, InteractionPages } from '../../authorization-server/interaction-pages.js'
import type { AuthorizationServer } from '../../authorization-server/provider.js'

type Form = { Params: { uid: string }, Body: FormBody }

/**
 * The sign-in, MFA and consent pages of the authorization server (docs/api.md, "Authorization
 * server"); what each answers is `InteractionPages`'.
 */
export function interactionRoutes (server: AuthorizationServer): FastifyPluginAsync {
  return async (fastify) => {
    await fastify.register(formbody)
    const pages = new InteractionPages(server, fastify.services, Object.keys(fastify.config.oauth))
    const page = { config: { access: 'public' as const }, schema: { hide: true } }
    /** Every form takes a credential or a choice: counted in the sign-in tier. */
    const form = { config: { access: 'public' as const, signInRate: true }, schema: { hide: true } }

    fastify.get<Form>('/interaction/:uid', page, async (request, reply) => await pages.view(request, reply))
    fastify.post<Form>('/interaction/:uid/login', form, async (request, reply) => await pages.password(request, reply))
    fastify.get<{ Params: { uid: string }, Querystring: { code?: string, error?: string } }>(
      '/interaction/:uid/federated', page, async (request, reply) => await pages.federated(request, reply))
    fastify.post<Form>('/interaction/:uid/sso', form, async (request, reply) => await pages.singleSignOn(request, reply))
    fastify.post<Form>('/interaction/:uid/email-code', form, async (request, reply) => await pages.emailCode(request, reply))
    fastify.post<Form>('/interaction/:uid/email', form, async (request, reply) => await pages.emailSignIn(request, reply))
    fastify.get<{ Params: { uid: string }, Querystring: { token?: string } }>(
      '/interaction/:uid/email', { ...page, config: { ...page.config, signInRate: true } }, async (request, reply) => await pages.emailLink(request, reply))
    fastify.post<Form>('/interaction/:uid/passkey', form, async (request, reply) => await pages.passkey(request, reply))
    fastify.post<Form>('/interaction/:uid/mfa', form, async (request, reply) => await pages.secondFactor(request, reply))
    fastify.post<Form>('/interaction/:uid/mfa/code', form, async (request, reply) => await pages.sendCode(request, reply))
    fastify.post<Form>('/interaction/:uid/consent', form, async (request, reply) => await pages.consent(request, reply))
    fastify.post<Form>('/interaction/:uid/abort', form, async (request, reply) => await pages.abort(request, reply))
  }
}
