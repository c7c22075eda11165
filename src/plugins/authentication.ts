import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Permission, Role } from '../../schemas/rbac.js'
import { Errors } from '../errors.js'
import { hasPermission } from '../security/permissions.js'
import { TokenVerificationError } from '../security/tokens.js'

/** The caller of a protected route, as established from the bearer token. */
export interface AuthenticatedUser {
  id: string
  /** Current roles from the database, not the token's claim, so a removal takes effect at once. */
  roles: Role[]
  mfaEnabled: boolean
  /** The access token's identifier and expiry, for revocation. */
  jti: string
  tokenExpiresAt: Date
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable by a user who must enrol MFA but has not yet (CONTRACT section 4). */
    allowWithoutMfa?: boolean
  }
  interface FastifyRequest {
    user: AuthenticatedUser | null
  }
  interface FastifyInstance {
    /** onRequest hook: spec 5.1 bearer authentication. */
    authenticate: onRequestAsyncHookHandler
    /** onRequest hook for public routes that show more to a caller: authenticates when a token is sent. */
    authenticateIfPresent: onRequestAsyncHookHandler
    /** onRequest hook (after `authenticate`): spec 5.4 permission check. */
    requirePermission: (permission: Permission, ownerOf?: (request: FastifyRequest) => string | undefined) => onRequestAsyncHookHandler
    /**
     * onRequest hook for `/:id` routes: the user `id` itself needs `selfPermission` (as the
     * owner), anyone else `otherPermission`.
     */
    requireSelfOr: (otherPermission: Permission, selfPermission?: Permission) => onRequestAsyncHookHandler
    /** Throws `Authentication required` or `Permission denied. Requires: <permission>`. */
    authorize: (request: FastifyRequest, permission: Permission, ownerId?: string) => AuthenticatedUser
  }
}

const BEARER = 'Bearer '

/** A failed token verification as the HTTP error: expired tokens tell the client to refresh. */
export function tokenFailure (error: unknown): Error {
  return error instanceof TokenVerificationError && error.reason === 'expired' ? new Errors.TOKEN_EXPIRED() : new Errors.INVALID_TOKEN()
}

export default fp(async (fastify) => {
  const { tokens, repositories, revocations } = fastify
  const mfaRequiredRoles = new Set<string>(fastify.config.mfa.requiredRoles)
  fastify.decorateRequest('user', null)

  fastify.decorate('authenticate', async function authenticate (request: FastifyRequest) {
    const header = request.headers.authorization
    if (header === undefined || !header.startsWith(BEARER)) throw new Errors.MISSING_TOKEN()
    let claims
    try {
      claims = tokens.verify(header.slice(BEARER.length).trim(), 'access')
    } catch (error) {
      throw tokenFailure(error)
    }
    if (revocations.isRevoked(claims.jti)) throw new Errors.INVALID_TOKEN()
    // A deleted user's tokens stop working with the account.
    const principal = await repositories.users.cachedPrincipal(claims.sub)
    if (principal === undefined) throw new Errors.INVALID_TOKEN()
    if (!principal.mfaEnabled && request.routeOptions.config.allowWithoutMfa !== true &&
      principal.roles.some((role) => mfaRequiredRoles.has(role))) {
      throw new Errors.MFA_ENROLLMENT_REQUIRED()
    }
    request.user = { id: principal.id, roles: principal.roles, mfaEnabled: principal.mfaEnabled, jti: claims.jti, tokenExpiresAt: new Date(claims.exp * 1000) }
  })

  fastify.decorate('authenticateIfPresent', async function authenticateIfPresent (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
    // A token that is sent must be good: a bad one is refused, not ignored.
    if (request.headers.authorization !== undefined) await fastify.authenticate.call(this, request, reply)
  })

  function authorize (request: FastifyRequest, permission: Permission, ownerId?: string): AuthenticatedUser {
    const { user } = request
    if (user === null) throw new Errors.AUTHENTICATION_REQUIRED()
    if (!hasPermission(user, permission, ownerId)) throw new Errors.FORBIDDEN(permission)
    return user
  }
  fastify.decorate('authorize', authorize)

  fastify.decorate('requirePermission', (permission: Permission, ownerOf?: (request: FastifyRequest) => string | undefined) =>
    async function requirePermission (request: FastifyRequest) {
      authorize(request, permission, ownerOf?.(request))
    })

  fastify.decorate('requireSelfOr', (otherPermission: Permission, selfPermission: Permission = 'read') =>
    async function requireSelfOr (request: FastifyRequest) {
      const { id } = request.params as { id: string }
      if (request.user?.id === id) authorize(request, selfPermission, id)
      else authorize(request, otherPermission)
    })
}, { name: 'authentication', dependencies: ['security', 'repositories', 'revocation'] })
