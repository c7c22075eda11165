import formbody from '@fastify/formbody'
import type { FastifyPluginAsync, RouteHandlerMethod } from 'fastify'
import { AUTHORIZATION_PATH, AUTHORIZATION_SERVER_PATH, DEVICE_PATH, END_SESSION_PATH } from '../../authorization-server/paths.js'
import type { AuthorizationServer } from '../../authorization-server/provider.js'
import type { FormBody } from '../../authorization-server/interaction-pages.js'

const PUBLIC = { access: 'public' as const }
const HIDDEN = { hide: true }
const ALL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD']

/**
 * The authorization and end-session endpoints take POST as OpenID Connect requires (Core 3.1.2.1,
 * RP-Initiated Logout 2): a form posted to either is answered with a redirect to the same request
 * by GET. oidc-provider's own POST support would need its session cookie to be `SameSite=None`,
 * sent with any other site's requests; the redirect is a top-level navigation, which the
 * `SameSite=Lax` cookie accompanies. Repeated parameters stay repeated (and are refused).
 */
const POSTED_AS_GET = [AUTHORIZATION_PATH, END_SESSION_PATH]

export function postedAsGet (): FastifyPluginAsync {
  return async (fastify) => {
    await fastify.register(formbody)
    for (const path of POSTED_AS_GET) {
      fastify.post<{ Body: FormBody }>(path, { config: PUBLIC, schema: HIDDEN }, async (request, reply) => {
        const query = new URLSearchParams()
        for (const [name, value] of Object.entries(request.body ?? {})) {
          for (const item of [value ?? []].flat()) query.append(name, item)
        }
        return await reply.redirect(`${AUTHORIZATION_SERVER_PATH}${path}?${query.toString()}`, 303)
      })
    }
  }
}

/**
 * Everything else under /oidc is oidc-provider's (authorization, token, userinfo, introspection,
 * revocation, device, end-session, its discovery): handed the raw request with its body unread
 * (oidc-provider reads bodies itself) and the security headers already set.
 */
export function providerEndpoints (server: AuthorizationServer): FastifyPluginAsync {
  const callback = server.provider.callback()
  return async (fastify) => {
    fastify.removeAllContentTypeParsers()
    fastify.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
    const handler: RouteHandlerMethod = function handOver (request, reply) {
      server.addressToIssuer(request.raw)
      reply.hijack()
      const raw = reply.raw
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) raw.setHeader(name, value)
      }
      const original = request.raw.url ?? '/'
      // oidc-provider builds its addresses from the part of the URL it was mounted at; the
      // request log names the whole one, put back before the line is written.
      Object.assign(request.raw, { originalUrl: original, url: original.slice(AUTHORIZATION_SERVER_PATH.length) || '/' })
      raw.once('finish', () => { request.raw.url = original })
      fastify.logWhenAnswered(request, reply)
      void callback(request.raw, raw)
    }
    fastify.route({ method: ALL_METHODS, url: '/*', config: PUBLIC, schema: HIDDEN, handler })
    // The device's user code is a secret of eight letters: guesses at it count in the sign-in tier.
    fastify.route({
      method: ALL_METHODS, url: DEVICE_PATH, config: { ...PUBLIC, signInRate: true }, schema: HIDDEN, handler
    })
  }
}
