import type { FastifyPluginAsync } from 'fastify'
import { AUTHORIZATION_SERVER_PATH } from './authorization-server/paths.js'
import type { Config } from './config/index.js'
import access from './plugins/application/access.js'
import adminBootstrap from './plugins/application/admin-bootstrap.js'
import audit from './plugins/application/audit.js'
import authentication from './plugins/application/authentication.js'
import authorizationServer from './plugins/application/authorization-server.js'
import background from './plugins/application/background.js'
import cors from './plugins/infrastructure/cors.js'
import database from './plugins/infrastructure/database.js'
import documentation from './plugins/infrastructure/documentation.js'
import errorHandler from './plugins/infrastructure/error-handler.js'
import rateLimit from './plugins/infrastructure/rate-limit.js'
import redis from './plugins/infrastructure/redis.js'
import repositories from './plugins/application/repositories.js'
import revocation from './plugins/application/revocation.js'
import credentials from './plugins/application/credentials.js'
import securityHeaders from './plugins/infrastructure/security-headers.js'
import services from './plugins/application/services.js'
import textInput from './plugins/infrastructure/text-input.js'
import zeroTrust from './plugins/application/zero-trust.js'
import apiKeyRoutes from './routes/api-keys/index.js'
import auditLogRoutes from './routes/audit-logs/index.js'
import overviewRoutes from './routes/overview/index.js'
import authRoutes from './routes/auth/index.js'
import healthRoutes from './routes/health/index.js'
import postsRoutes from './routes/posts/index.js'
import invitationRoutes from './routes/invitations/index.js'
import oidcRoutes from './routes/oidc/index.js'
import organizationRoutes from './routes/organizations/index.js'
import accessCheckRoutes from './routes/access-check/index.js'
import usersRoutes from './routes/users/index.js'
import webhookRoutes from './routes/webhooks/index.js'
import oauthClientRoutes from './routes/oauth-clients/index.js'
import scimRoutes from './routes/scim/index.js'
import ssoRoutes from './routes/sso/index.js'
import wellKnownRoutes from './routes/well-known/index.js'
import consoleRoutes from './routes/console/index.js'
import { redactUrl } from './security/redaction.js'
import { personOf } from './services/context.js'
import type { TxtResolver } from './services/organizations/txt-records.js'
import type { Resolver } from './security/outbound-http.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

export interface AppOptions {
  config: Config
  /** How webhook endpoints' host names are resolved: the system's resolver unless given (tests give one). */
  resolve?: Resolver
  /** How claimed domains' TXT records are looked up: the system's resolvers unless given (tests give their own). */
  resolveTxt?: TxtResolver
  /**
   * PBKDF2 rounds of the passwords it hashes: PBKDF2_ROUNDS unless given. Tests give fewer, as
   * their subject is the rules and not the hash's cost (docs/testing.md).
   */
  passwordRounds?: number
  /** Told every statement the database runs: tests count a request's reads with it (docs/testing.md). */
  onStatement?: (sql: string) => void
}

/**
 * The application: edge protections first (their hooks run on every request, errors and
 * 404s included), then infrastructure, decorators and guards, then routes (no listen).
 */
const app: FastifyPluginAsync<AppOptions> = async (fastify, options) => {
  const { config, resolve, resolveTxt, passwordRounds, onStatement } = options
  fastify.decorate('config', config)
  for (const warning of config.warnings) fastify.log.warn(warning)
  // Bodies are JSON or refused with 415 (docs/api.md, "Conventions").
  fastify.removeContentTypeParser('text/plain')

  await fastify.register(securityHeaders)
  // Before any route is added (@fastify/cors adds one): a route keeps the error handler it
  // was added under.
  await fastify.register(errorHandler, {
    // Asked only when a write refers to a row deleted meanwhile, once the repositories are there.
    callerDeleted: async (request) => {
      const person = request.user === null ? null : personOf(request.user)
      return person !== null && await fastify.repositories.users.findById(person) === undefined
    }
  })
  await fastify.register(cors)
  await fastify.register(database, { onStatement })
  await fastify.register(redis)
  await fastify.register(credentials, { passwordRounds })
  await fastify.register(repositories)
  await fastify.register(revocation)
  await fastify.register(authentication)
  await fastify.register(audit)
  await fastify.register(rateLimit, {
    // The rate limits are infrastructure: what a refusal means to the audit trail is said here.
    onFirstRefusal: (request, limit) => {
      request.audit('rate_limit.exceeded', { outcome: 'failure', details: { method: request.method, url: redactUrl(request.url), limit } })
    }
  })
  await fastify.register(textInput)
  await fastify.register(services, { resolve, resolveTxt })
  await fastify.register(authorizationServer)
  await fastify.register(zeroTrust)
  await fastify.register(background)
  await fastify.register(adminBootstrap)
  await fastify.register(documentation)
  // After the documentation pages (public, added by their plugins), before the API's routes.
  await fastify.register(access)

  await fastify.register(healthRoutes, { prefix: '/health' })
  await fastify.register(usersRoutes, { prefix: '/api/v1/users' })
  await fastify.register(authRoutes, { prefix: '/api/v1/auth' })
  await fastify.register(postsRoutes, { prefix: '/api/v1/posts' })
  await fastify.register(auditLogRoutes, { prefix: '/api/v1/audit-logs' })
  await fastify.register(overviewRoutes, { prefix: '/api/v1/overview' })
  await fastify.register(organizationRoutes, { prefix: '/api/v1/organizations' })
  await fastify.register(invitationRoutes, { prefix: '/api/v1/invitations' })
  await fastify.register(webhookRoutes, { prefix: '/api/v1/webhooks' })
  await fastify.register(apiKeyRoutes, { prefix: '/api/v1/api-keys' })
  await fastify.register(oauthClientRoutes, { prefix: '/api/v1/oauth-clients' })
  await fastify.register(ssoRoutes, { prefix: '/api/v1/sso' })
  await fastify.register(scimRoutes, { prefix: '/scim/v2/directories' })
  await fastify.register(accessCheckRoutes, { prefix: '/api/v1/security' })
  await fastify.register(wellKnownRoutes, { prefix: '/.well-known' })
  await fastify.register(oidcRoutes, { prefix: AUTHORIZATION_SERVER_PATH })
  await fastify.register(consoleRoutes)
}

export default app
