import type { FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'
import type { Role } from '../../../schemas/rbac.js'
import { Errors, tokenFailure } from '../../errors.js'
import type { Caller, DirectoryStanding, OrganizationStanding, RequestContext } from '../../services/context.js'
import { isApiKey } from '../../security/api-key-format.js'
import { suspensionInForce } from '../../security/suspension.js'
import { hasPermission, mustEnrolMfa } from '../../security/permissions.js'
import type { AccessClaims } from '../../security/tokens.js'
import type { UserPrincipal } from '../../store/users.js'
import { apiKeyAuthentication } from './api-key-authentication.js'

declare module '@fastify/jwt' {
  interface FastifyJWT {
    /** @fastify/jwt declares `request.user` too: here it is the caller, not a token's claims. */
    user: Caller | null
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Reachable by a user who must enrol MFA but has not yet (docs/api.md, "Required roles"). */
    allowWithoutMfa?: boolean
  }
  interface FastifyRequest {
    user: Caller | null
    /** The caller's standing in the organization of the path, set by its guard (src/plugins/application/access.ts). */
    organizationStanding: OrganizationStanding | null
    /** The SCIM directory whose token the request bears, set by its guard (src/plugins/application/access.ts). */
    scimDirectory: DirectoryStanding | null
    /** What a service is told of this request: its address, user agent and caller. */
    readonly serviceContext: RequestContext
  }
  interface FastifyInstance {
    /** onRequest hook: bearer authentication (docs/api.md, "Bearer authentication"). */
    authenticate: AuthenticationHook
    /** onRequest hook for public routes that show more to a caller: authenticates when a token is sent. */
    authenticateIfPresent: AuthenticationHook
  }
}

/**
 * The guards are callback-style hooks: with the caller's principal cached they answer
 * without a promise, and an async hook costs a promise and its resolution on every
 * protected request.
 */
export type AuthenticationHook = (request: FastifyRequest, reply: unknown, done: HookHandlerDoneFunction) => void

const BEARER = 'Bearer '

/**
 * Sets `request.user`, or gives the error that refuses the request. An impersonation's
 * token works only while its administrator may still impersonate: not deleted, not
 * suspended, still holding the permission (docs/api.md, "Impersonation").
 */
function admit (
  request: FastifyRequest,
  claims: AccessClaims,
  principal: UserPrincipal | undefined,
  impersonator: UserPrincipal | undefined | null,
  mfaRequiredRoles: readonly Role[]
): Error | undefined {
  // A deleted user's tokens stop working with the account.
  if (principal === undefined) return new Errors.INVALID_TOKEN()
  if (impersonator !== null && (impersonator === undefined || !hasPermission(impersonator, 'impersonate_users') ||
    suspensionInForce(impersonator, Date.now()) !== undefined)) return new Errors.INVALID_TOKEN()
  // TOTP or a passkey meets the requirement (docs/api.md, "Required roles").
  if (request.routeOptions.config.allowWithoutMfa !== true && mustEnrolMfa(principal, mfaRequiredRoles)) {
    return new Errors.MFA_ENROLLMENT_REQUIRED()
  }
  request.user = {
    id: principal.id,
    roles: principal.roles,
    mfaEnabled: principal.mfaEnabled,
    jti: claims.jti,
    tokenExpiresAt: new Date(claims.exp * 1000),
    authTime: claims.auth_time ?? claims.iat,
    amr: claims.amr ?? [],
    impersonatorId: claims.act?.sub ?? null
  }
  return undefined
}

export default fp(async (fastify) => {
  const { tokens, repositories, revocations } = fastify
  const mfaRequiredRoles = fastify.config.mfa.requiredRoles
  fastify.decorateRequest('user', null)
  fastify.decorateRequest('organizationStanding', null)
  fastify.decorateRequest('scimDirectory', null)
  fastify.decorateRequest('serviceContext', {
    getter (this: FastifyRequest): RequestContext {
      const context: RequestContext = { ip: this.ip, userAgent: this.headers['user-agent'] ?? null, caller: this.user ?? null }
      if (this.organizationStanding !== null) context.organization = this.organizationStanding
      if (this.scimDirectory !== null) context.directory = this.scimDirectory
      return context
    }
  })

  /** The bearer token's claims (undefined: no `Bearer ` header): verified, unexpired and not revoked. */
  function verifiedClaims (token: string | undefined) {
    if (token === undefined) throw new Errors.MISSING_TOKEN()
    let claims
    try {
      claims = tokens.verify(token, 'access')
    } catch (error) {
      throw tokenFailure(error)
    }
    if (revocations.isRevoked(claims.jti)) throw new Errors.INVALID_TOKEN()
    return claims
  }

  const authenticateKey = apiKeyAuthentication({ repositories, revocations, mfaRequiredRoles, log: fastify.log })

  function authenticate (request: FastifyRequest, _reply: unknown, done: HookHandlerDoneFunction): void {
    // The header is read once: an API key and an access token come the same way.
    const header = request.headers.authorization
    const credential = header?.startsWith(BEARER) === true ? header.slice(BEARER.length).trim() : undefined
    if (credential !== undefined && isApiKey(credential)) {
      authenticateKey(request, credential, done)
      return
    }
    let claims
    try {
      claims = verifiedClaims(credential)
    } catch (error) {
      done(error as Error)
      return
    }
    const { users } = repositories
    const principal = users.cachedPrincipal(claims.sub)
    const impersonator = claims.act === undefined ? null : users.cachedPrincipal(claims.act.sub)
    if (principal instanceof Promise || impersonator instanceof Promise) {
      Promise.all([principal, impersonator])
        .then(([found, acting]) => { done(admit(request, claims, found, acting, mfaRequiredRoles)) }, done)
    } else {
      done(admit(request, claims, principal, impersonator, mfaRequiredRoles))
    }
  }
  fastify.decorate('authenticate', authenticate)

  fastify.decorate('authenticateIfPresent', function authenticateIfPresent (request: FastifyRequest, reply: unknown, done: HookHandlerDoneFunction) {
    // A token that is sent must be good: a bad one is refused, not ignored.
    if (request.headers.authorization !== undefined) authenticate(request, reply, done)
    else done()
  })
}, { name: 'authentication', dependencies: ['credentials', 'repositories', 'revocation'] })
