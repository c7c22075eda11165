import type { ApiKeyScope } from '../../schemas/api-keys.js'
import type { OrganizationRole } from '../../schemas/organizations.js'
import type { Role } from '../../schemas/rbac.js'
import { Errors } from '../errors.js'

/** The caller of a protected route, as established from the bearer token. */
export interface Caller {
  id: string
  /** Current roles from the database, not the token's claim, so a removal takes effect at once. */
  roles: Role[]
  mfaEnabled: boolean
  /** The access token's identifier and expiry, for revocation. */
  jti: string
  tokenExpiresAt: Date
  /** When the sign-in behind the token was proved (seconds since the epoch), and how (RFC 8176 `amr` values). */
  authTime: number
  amr: string[]
  /** The administrator acting as the user (an impersonation token's `act`), or null. */
  impersonatorId: string | null
  /** The API key the request bears, absent for an access token (docs/api.md, "API keys"). */
  apiKey?: ApiKeyGrant
}

/**
 * What an API key lets its bearer do: the permissions in `scopes` that its owner holds. An
 * organization's key has no person behind it: the caller's `id` is the key's, and it acts in
 * `organization` only, with the key's role.
 */
export interface ApiKeyGrant {
  id: string
  scopes: readonly ApiKeyScope[]
  organization: { id: string, role: OrganizationRole } | null
}

/**
 * What a service needs to know of the request it serves: who asks (null before sign-in) and
 * from where, for the lockout (by address) and the audit log.
 */
export interface RequestContext {
  ip: string
  userAgent: string | null
  caller: Caller | null
  /**
   * The caller's standing in the organization the route names, as its guard read it
   * (src/plugins/application/access.ts): absent on routes without one.
   */
  organization?: OrganizationStanding
  /** The SCIM directory whose token the request bears (SCIM routes only: their caller is null). */
  directory?: DirectoryStanding
}

/** A SCIM directory as its token's guard read it: its organization, and how its groups map to roles. */
export interface DirectoryStanding {
  id: string
  organizationId: string
  roleMapping: Record<string, OrganizationRole>
  defaultRole: OrganizationRole
}

/** The directory of a SCIM route: its guard admitted no request without one. */
export function directoryOf (context: RequestContext): DirectoryStanding {
  if (context.directory === undefined) throw new Errors.AUTHENTICATION_REQUIRED()
  return context.directory
}

/**
 * The role the caller acts with in an organization: their membership's, an owner's for a
 * global super_admin, null for a global reader (docs/api.md, "Organizations").
 */
export interface OrganizationStanding {
  id: string
  role: OrganizationRole | null
}

/**
 * The caller of a route declared for signed-in callers: its
 * guards admitted nobody else (docs/architecture.md, "Access").
 */
export function callerOf (context: RequestContext): Caller {
  if (context.caller === null) throw new Errors.AUTHENTICATION_REQUIRED()
  return context.caller
}

/**
 * The caller of a change that makes what lasts or changes how people sign in (a SCIM directory,
 * an SSO connection, a domain's requirement, an OAuth client, a webhook, a trusted device, a role
 * above `member`): the account holder, signed in. What it makes outlives an API key or an
 * impersonation that could ask for it (docs/api.md, "API keys").
 */
export function holderOf (context: RequestContext, what: string): Caller {
  const caller = callerOf(context)
  assertAccountHolder(caller, what)
  return caller
}

/** The person behind the caller: null for an organization's API key, which has none. */
export function personOf (caller: Pick<Caller, 'id' | 'apiKey'>): string | null {
  return caller.apiKey?.organization != null ? null : caller.id
}

/**
 * Refuses `what` to an impersonation (docs/api.md, "Impersonation") and to an API key
 * (docs/api.md, "API keys"): the sensitive changes, impersonating and making credentials that
 * outlive the request are the account holder's own, signed in.
 */
export function assertAccountHolder (caller: Pick<Caller, 'impersonatorId' | 'apiKey'>, what: string): void {
  if (caller.impersonatorId !== null) throw new Errors.IMPERSONATION_RESTRICTED(what)
  if (caller.apiKey !== undefined) throw new Errors.API_KEY_RESTRICTED(what)
}
