import type { AuthorizationGrant } from '../../../schemas/authorization-grants.js'
import { CONSOLE_CLIENT_ID } from '../../authorization-server/paths.js'
import { Errors } from '../../errors.js'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import type { AuthorizationArtifactsRepository } from '../../store/authorization-artifacts.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { OAuthClientsTable } from '../../store/types.js'
import type { AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'

export interface AuthorizationGrantDependencies {
  artifacts: Pick<AuthorizationArtifactsRepository, 'grantsOf' | 'revokeGrant' | 'chooseOrganization' | 'organizationOfGrant'>
  clients: { findById: (id: string) => Promise<OAuthClientsTable | undefined> }
  organizations: Pick<OrganizationsRepository, 'roleOf' | 'membershipsOf'>
  audit: AuditTrail
  now?: () => number
}

/** What oidc-provider keeps in a grant's payload that a person is shown. */
interface GrantPayload { iat?: number, exp?: number, openid?: { scope?: string } }

/** The most organizations the consent page offers to choose from (their newest memberships). */
const ORGANIZATIONS_OFFERED = 100

/** An organization the consent page offers for the `organization` scope. */
export interface OfferedOrganization { id: string, name: string }

const isoOf = (seconds: number | undefined) => seconds === undefined ? null : new Date(seconds * 1000).toISOString()

/**
 * The consents a person gave applications at the authorization server (docs/api.md,
 * "Authorization server"): listed, and revoked, which ends every token they gave.
 */
export class AuthorizationGrantService {
  readonly #now: () => number
  constructor (private readonly deps: AuthorizationGrantDependencies) {
    this.#now = deps.now ?? Date.now
  }

  async list (context: RequestContext): Promise<AuthorizationGrant[]> {
    const grants = await this.deps.artifacts.grantsOf(callerOf(context).id, new Date(this.#now()).toISOString())
    // The service's own console is no application the person connected (docs/console.md).
    return await Promise.all(grants.filter((grant) => grant.clientId !== CONSOLE_CLIENT_ID).map(async (grant) => {
      const payload = JSON.parse(grant.payload) as GrantPayload
      const client = await this.deps.clients.findById(grant.clientId)
      return {
        id: grant.id,
        client_id: grant.clientId,
        client_name: client?.name ?? '',
        scopes: (payload.openid?.scope ?? '').split(' ').filter((scope) => scope !== ''),
        organization_id: grant.organizationId,
        granted_at: isoOf(payload.iat) ?? new Date(0).toISOString(),
        expires_at: isoOf(payload.exp)
      }
    }))
  }

  /**
   * The `organization` scope (docs/api.md, "Authorization server"): the organizations the
   * person may choose from on the consent page, their newest memberships first.
   */
  async organizationsToChoose (userId: string): Promise<OfferedOrganization[]> {
    const memberships = await this.deps.organizations.membershipsOf(userId, ORGANIZATIONS_OFFERED)
    return memberships.map((membership) => ({ id: membership.organization_id, name: membership.name }))
  }

  /**
   * Whether the consent page must ask which organization: the person is a member of one, and
   * the consent (none yet when undefined) chose none they still are a member of.
   */
  async mustChooseOrganization (userId: string, grantId: string | undefined): Promise<boolean> {
    if (grantId !== undefined && await this.organizationOf(grantId, userId) !== undefined) return false
    return (await this.deps.organizations.membershipsOf(userId, 1)).length > 0
  }

  /** Records the organization chosen on the consent page; it must be one the person is a member of. */
  async chooseOrganization (userId: string, grantId: string, organizationId: string): Promise<void> {
    if (await this.deps.organizations.roleOf(organizationId, userId) === undefined) throw new Errors.NOT_FOUND('Organization')
    if (!await this.deps.artifacts.chooseOrganization(userId, grantId, organizationId)) throw new Errors.NOT_FOUND('Consent')
  }

  /**
   * The organization the consent chose and the person's role in it now (the tokens' `org_id`
   * and `org_roles`); none once they are no longer a member.
   */
  async organizationOf (grantId: string, userId: string): Promise<{ id: string, role: OrganizationRole } | undefined> {
    const organizationId = await this.deps.artifacts.organizationOfGrant(userId, grantId)
    if (organizationId === undefined) return undefined
    const role = await this.deps.organizations.roleOf(organizationId, userId)
    return role === undefined ? undefined : { id: organizationId, role }
  }

  /** Ends the consent and every code and token it gave; the application must ask again. */
  async revoke (context: RequestContext, grantId: string): Promise<void> {
    const userId = callerOf(context).id
    if (!await this.deps.artifacts.revokeGrant(userId, grantId)) throw new Errors.NOT_FOUND('Consent')
    await this.deps.audit.recordIn(context, 'authorization_grant.revoked', { outcome: 'success', actorId: userId, targetId: userId, details: { grant_id: grantId } })
  }
}
