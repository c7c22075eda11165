import type { FastifyRequest, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { BEARER, DIRECTORY_BEARER, OPTIONAL_BEARER, PUBLIC } from '../../../schemas/common.js'
import type { OrganizationPermission } from '../../../schemas/organizations.js'
import type { Permission } from '../../../schemas/rbac.js'
import { Errors } from '../../errors.js'
import { authorize } from '../../security/permissions.js'
import { actingRole, decide, keyStandingIn, standingOf } from '../../security/organization-permissions.js'
import { canonicalUuid, isUuid } from '../../store/ids.js'
import type { Caller, DirectoryStanding } from '../../services/context.js'
import type { AuthenticationHook } from './authentication.js'

/**
 * Who may call a route, declared once in its options (`config: { access }`); the guards and
 * the route's `security` in the OpenAPI document both come from it (docs/architecture.md, "Access").
 * - `public`: no token is read;
 * - `optional`: a token, when sent, must be good; the route shows more to a caller;
 * - `bearer`: any signed-in caller; what may be done to a target is the service's rule;
 * - `{ permission }`: a caller holding the permission;
 * - `{ permission, self }`: for `/:id` routes, the user `id` itself needs `self` (an owner's
 *   right), anyone else `permission`;
 * - `{ organization, permission, self }`: an organization permission, checked against the
 *   caller's role in the organization whose id is the path parameter `organization` names;
 *   with `self`, the member `userId` of the path itself needs only `self` (leaving);
 * - `{ directory }`: the bearer token of the SCIM directory whose id is that path parameter
 *   (no account calls these routes: the request's caller stays null).
 */
export type RouteAccess =
  | 'public'
  | 'optional'
  | 'bearer'
  | { permission: Permission, self?: Permission }
  | OrganizationAccess
  | { directory: string }

export interface OrganizationAccess {
  organization: string
  permission: OrganizationPermission
  self?: OrganizationPermission
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route: every route of the API declares it. */
    access?: RouteAccess
  }
}

/** A path parameter as validation will spell it: guards run before validation makes ids canonical. */
function idParam (request: FastifyRequest, name = 'id'): string {
  return canonicalUuid((request.params as Record<string, string>)[name] ?? '')
}

/** A key's scopes name the organization permissions it may use, as they name the others (`admin`: all). */
function keyLacks (caller: Caller, permission: OrganizationPermission): boolean {
  const scopes = caller.apiKey?.scopes
  return scopes !== undefined && !scopes.includes(permission) && !scopes.includes('admin')
}

/**
 * On routes any signed-in caller may call, which name no permission, an API key needs the scope
 * `read` to read and `write` to change anything (docs/api.md, "API keys"); `admin` covers both.
 */
function assertKeyScope (request: FastifyRequest): void {
  const scopes = request.user?.apiKey?.scopes
  if (scopes === undefined || scopes.includes('admin')) return
  const needed = request.method === 'GET' || request.method === 'HEAD' ? 'read' : 'write'
  if (!scopes.includes(needed)) throw new Errors.FORBIDDEN(needed)
}
const keyScope = guard('requireKeyScope', assertKeyScope)

/** A callback-style guard from a check that throws, named so route listings say what guards a route. */
function guard (name: string, check: (request: FastifyRequest) => void): AuthenticationHook {
  const hook: AuthenticationHook = (request, _reply, done) => {
    try {
      check(request)
    } catch (error) {
      done(error as Error)
      return
    }
    done()
  }
  return Object.defineProperty(hook, 'name', { value: name })
}

/**
 * A SCIM directory's token (docs/api.md, "SCIM provisioning"): it must be the token of the
 * directory the path parameter names; any other, another directory's included, is INVALID_TOKEN.
 */
function directoryGuard (
  directoryOfToken: (token: string) => Promise<DirectoryStanding | undefined>, parameter: string
): AuthenticationHook {
  const check = async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization ?? ''
    const token = /^Bearer /i.test(header) ? header.slice('Bearer '.length).trim() : ''
    if (token === '') throw new Errors.MISSING_TOKEN()
    const directory = await directoryOfToken(token)
    if (directory === undefined || directory.id !== idParam(request, parameter)) throw new Errors.INVALID_TOKEN()
    request.scimDirectory = directory
  }
  const hook: AuthenticationHook = (request, _reply, done) => {
    check(request).then(() => { done() }, done)
  }
  return Object.defineProperty(hook, 'name', { value: 'requireDirectoryToken' })
}

/**
 * Reads each route's declared access: adds its guards before the route's own onRequest hooks
 * and writes its `security`. A route without a declaration stops start-up. Registered after the
 * documentation pages (public, added by their plugins) and before the API's routes.
 */
export default fp(async (fastify) => {
  const { authenticate, authenticateIfPresent, repositories, auditTrail, services } = fastify

  /**
   * The organization check (docs/api.md, "Organizations"): the caller's role in the path's
   * organization must carry the permission. One who is no member is told the organization does
   * not exist (404); a global super_admin acts as an owner, and each such request is audited.
   */
  function organizationGuard ({ organization, permission, self }: OrganizationAccess): AuthenticationHook {
    const check = async (request: FastifyRequest): Promise<void> => {
      const caller = request.user
      if (caller === null) throw new Errors.AUTHENTICATION_REQUIRED()
      const organizationId = idParam(request, organization)
      // Not an id at all: validation answers 400, as it does on every route.
      if (!isUuid(organizationId)) return
      const ofKey = caller.apiKey?.organization ?? null
      const membership = ofKey === null ? await repositories.organizations.roleOf(organizationId, caller.id) : undefined
      const standing = ofKey === null ? standingOf(caller, membership) : keyStandingIn(ofKey, organizationId)
      const needed = self !== undefined && idParam(request, 'userId') === caller.id ? self : permission
      const decision = decide(standing, needed)
      if (decision === 'hidden') throw new Errors.NOT_FOUND('Organization')
      if (decision === 'refused' || keyLacks(caller, needed)) throw new Errors.FORBIDDEN(needed)
      // The member's own right (leaving) is a change: a key needs `write` for it, as elsewhere.
      if (needed === self) assertKeyScope(request)
      // Read once: the services act on it rather than reading the membership again.
      request.organizationStanding = { id: organizationId, role: actingRole(standing) }
      if (standing.kind === 'super_admin' && (membership === undefined || decide({ kind: 'member', role: membership }, needed) !== 'granted')) {
        await auditTrail.recordIn(request.serviceContext, 'organization.accessed_as_super_admin', {
          outcome: 'success', details: { organization_id: organizationId, permission: needed, route: request.routeOptions.url }
        })
      }
    }
    const hook: AuthenticationHook = (request, _reply, done) => {
      check(request).then(() => { done() }, done)
    }
    return Object.defineProperty(hook, 'name', { value: 'requireOrganizationPermission' })
  }

  function guardsOf (access: RouteAccess): AuthenticationHook[] {
    if (access === 'public') return []
    if (access === 'optional') return [authenticateIfPresent, keyScope]
    if (access === 'bearer') return [authenticate, keyScope]
    if ('directory' in access) {
      return [directoryGuard(async (token) => await services.scimDirectories.directoryOfToken(token), access.directory)]
    }
    if ('organization' in access) return [authenticate, organizationGuard(access)]
    const { permission, self } = access
    if (self === undefined) {
      return [authenticate, guard('requirePermission', (request) => { authorize(request.user, permission) })]
    }
    return [authenticate, guard('requireSelfOr', (request) => {
      const id = idParam(request)
      if (request.user?.id === id) authorize(request.user, self, id)
      else authorize(request.user, permission)
    })]
  }

  fastify.addHook('onRoute', (route: RouteOptions) => {
    const access = route.config?.access
    if (access === undefined) {
      throw new Error(`${String(route.method)} ${route.url} declares no access: set config.access (docs/architecture.md, "Access")`)
    }
    const own = route.onRequest === undefined
      ? []
      : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest]
    const guards = guardsOf(access)
    if (guards.length > 0) route.onRequest = [...guards, ...own]
    const security = access === 'public'
      ? PUBLIC
      : access === 'optional' ? OPTIONAL_BEARER : typeof access === 'object' && 'directory' in access ? DIRECTORY_BEARER : BEARER
    route.schema = { ...route.schema, security }
  })
}, { name: 'access', dependencies: ['authentication', 'repositories', 'audit', 'services'] })
