import { createHmac, hkdfSync } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import type { AuthorizationServer } from '../../authorization-server/provider.js'
import { authorizationServerIssuer } from '../../config/index.js'
import { sameText } from '../../security/constant-time.js'
import { RedisShortLivedArtifacts } from '../../store/short-lived-artifacts.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** null unless JWT_ISSUER is an http(s) URL: an authorization server needs an address. */
    authorizationServer: AuthorizationServer | null
  }
}

/**
 * The service as an OAuth 2.1 / OpenID Connect provider (docs/api.md, "Authorization server"),
 * when JWT_ISSUER is an http(s) URL (its issuer); its routes are src/routes/oidc/.
 */
export default fp(async (fastify) => {
  const { config, repositories } = fastify
  const issuer = authorizationServerIssuer(config)
  if (issuer === null) {
    fastify.decorate('authorizationServer', null)
    return
  }
  const idTokenKeys = await fastify.services.idTokenKeys.current()
  // Loaded only when on: oidc-provider is large, and warns at load on Node.js 20.
  const { createAuthorizationServer } = await import('../../authorization-server/provider.js')
  const provider = createAuthorizationServer({
    issuer,
    secret: config.jwtSecret,
    idTokenKeys,
    scopes: config.authorizationServerScopes,
    sessionTtlS: config.session.idleTimeoutS,
    proxy: true,
    users: repositories.users,
    artifacts: repositories.authorizationArtifacts,
    sessions: fastify.services.sessions,
    grants: fastify.services.authorizationGrants,
    shortLived: fastify.redis === null ? null : new RedisShortLivedArtifacts(fastify.redis),
    clients: repositories.oauthClients
  })
  const { host, protocol } = new URL(issuer)
  const formKey = Buffer.from(hkdfSync('sha256', config.jwtSecret, '', 'authorization-server-forms', 32))
  const formToken = (uid: string) => createHmac('sha256', formKey).update(uid).digest('base64url')
  fastify.decorate('authorizationServer', {
    provider,
    idTokenJwks: idTokenKeys.published.map((key) => key.publicJwk),
    issuer,
    formToken,
    addressToIssuer (request: IncomingMessage): void {
      Object.assign(request.headers, { host, 'x-forwarded-host': host, 'x-forwarded-proto': protocol.slice(0, -1) })
    },
    isFormToken (uid: string, token: unknown): boolean {
      return typeof token === 'string' && sameText(formToken(uid), token)
    }
  })
}, { name: 'authorization-server', dependencies: ['repositories', 'redis', 'services'] })
