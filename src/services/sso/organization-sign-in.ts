import type { OrganizationRole } from '../../../schemas/organizations.js'
import { Errors, isServiceError } from '../../errors.js'
import { usableProfile } from '../../federation/providers.js'
import { IdpRefusal } from '../../federation/refusal.js'
import { emailDomain, type OrganizationDomainsRepository } from '../../store/organization-domains.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { ScimResourcesRepository } from '../../store/scim.js'
import type { SsoConnectionsRepository, StoredSsoConnection } from '../../store/sso-connections.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'
import type { SessionService } from '../sessions/index.js'
import type { FederatedSignInService, SignInService } from '../sign-in/index.js'
import { type AssertedPerson, mappedRole } from './assertion-profile.js'

export interface OrganizationSignInDependencies {
  ssoConnections: SsoConnectionsRepository
  users: UsersRepository
  organizations: OrganizationsRepository
  organizationDomains: OrganizationDomainsRepository
  scimResources: ScimResourcesRepository
  federation: FederatedSignInService
  signIn: SignInService
  sessions: SessionService
  audit: AuditTrail
  now?: () => number
}

/** The provider an organization's connection signs in as: its identities are linked under it. */
export const connectionProvider = (connectionId: string) => `sso:${connectionId}`

/** The connection a provider of connectionProvider's is, or null for any other provider. */
export const providerConnection = (provider: string): string | null => provider.startsWith('sso:') ? provider.slice(4) : null

/** A browser application's flow: where it goes back to, and the PKCE challenge its one-time code is for. */
export interface BrowserReturn { redirectTo: string, codeChallenge: string }

/**
 * What every connection's sign-in does once its IdP has spoken, SAML or OpenID (docs/api.md,
 * "Enterprise sign-in"): the person it names must have an address of a domain the organization
 * holds verified; the account is found, claimed or made under the account-claiming rule, and,
 * once it may sign in, joins the organization with the role its groups map to; the browser goes
 * back to the application with a one-time code, or the error's code, each refusal audited.
 */
export class OrganizationSignIn {
  readonly #now: () => number

  constructor (private readonly deps: OrganizationSignInDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * A connection of `kind` people may sign in through: enabled, of an organization holding a
   * verified domain (until then nobody could, and its IdP's URL is no place to send browsers to).
   */
  async usable<Kind extends StoredSsoConnection['kind']> (
    connectionId: string, kind: Kind
  ): Promise<Extract<StoredSsoConnection, { kind: Kind }>> {
    const connection = await this.deps.ssoConnections.find(connectionId)
    if (connection === undefined || !connection.enabled || connection.kind !== kind) throw new Errors.NOT_FOUND('SSO connection')
    if (!await this.deps.organizationDomains.holdsAnyVerified(connection.organizationId)) {
      throw new Errors.CONFLICT('The organization holds no verified domain: nobody signs in through its connections yet')
    }
    return connection as Extract<StoredSsoConnection, { kind: Kind }>
  }

  /**
   * The browser's way back to the application once `answer` established who the IdP names (or
   * refused its answer: an IdpRefusal, audited, is SSO_RESPONSE_REJECTED; a service error its code).
   */
  async complete (
    context: RequestContext,
    connectionId: string,
    flow: BrowserReturn,
    answer: () => Promise<{ connection: StoredSsoConnection, person: AssertedPerson }>
  ): Promise<string> {
    const back = new URL(flow.redirectTo)
    try {
      const { connection, person } = await answer()
      const { signIn, role } = await this.#vouched(context, connection, person)
      const code = await this.deps.signIn.exchangeCodeFor(context, signIn, flow.codeChallenge)
      await this.#joinOrganization(context, connection, signIn.userId, role)
      back.searchParams.set('code', code)
    } catch (error) {
      if (error instanceof IdpRefusal) {
        await this.#refused(context, connectionId, 'sso_response_rejected', error.message)
        back.searchParams.set('error', 'SSO_RESPONSE_REJECTED')
      } else if (isServiceError(error)) {
        // The provider failed (a refused token request, a timeout): the owners mend it, the audit log says how.
        if (error instanceof Errors.OAUTH_PROVIDER_ERROR) await this.#refused(context, connectionId, 'sso_provider_error', error.message)
        back.searchParams.set('error', error.code)
      } else {
        throw error
      }
    }
    return back.href
  }

  async #refused (context: RequestContext, connectionId: string, reason: string, detail: string): Promise<void> {
    await this.deps.audit.recordIn(context, 'auth.login_failed', {
      outcome: 'failure', actorId: null, targetId: null, details: { provider: connectionProvider(connectionId), reason, detail: detail.slice(0, 300) }
    })
  }

  /** The account the IdP vouches for, and the role its groups map to. */
  async #vouched (context: RequestContext, connection: StoredSsoConnection, person: AssertedPerson) {
    const { organizationDomains, federation, users } = this.deps
    // The IdP vouches only for addresses of domains its organization proved it holds.
    if (!await organizationDomains.isVerifiedFor(connection.organizationId, emailDomain(person.email))) {
      throw new IdpRefusal('the address is outside the organization\'s verified domains')
    }
    let profile
    try {
      profile = usableProfile({ subject: person.subject, email: person.email, emailVerified: true, name: person.name })
    } catch (error) {
      throw new IdpRefusal(error instanceof Error ? error.message : 'unusable profile')
    }
    const signIn = await federation.accountFor(context, connectionProvider(connection.id), profile)
    // An identity linked before signs its account in by the subject alone: that account's own
    // address must be one the organization vouches for too (it may have changed since, or the
    // domain been withdrawn).
    const account = await users.findById(signIn.userId)
    const vouched = account !== undefined &&
      await organizationDomains.isVerifiedFor(connection.organizationId, emailDomain(account.email))
    if (!vouched) {
      throw new IdpRefusal('the account\'s address is outside the organization\'s verified domains')
    }
    // The organization's directory has the last word on who belongs (docs/api.md, "SCIM provisioning").
    if (await this.deps.scimResources.deprovisioned(connection.organizationId, signIn.userId)) {
      throw new IdpRefusal('the organization\'s directory deactivated this person')
    }
    return { signIn, role: mappedRole(person.groups, connection.roleMapping, connection.defaultRole) }
  }

  /**
   * Just-in-time membership: a newcomer joins with the mapped role; a member's role follows
   * the IdP's groups when the connection maps groups (the last owner keeps theirs). A changed
   * role revokes the access tokens that carry the old one, as any role change does.
   */
  async #joinOrganization (
    context: RequestContext, connection: StoredSsoConnection, userId: string, role: OrganizationRole
  ): Promise<void> {
    const { organizations, sessions, audit } = this.deps
    const organizationId = connection.organizationId
    const update = Object.keys(connection.roleMapping).length > 0
    const now = new Date(this.#now()).toISOString()
    const outcome = await audit.recordChange(context, async (trx) => {
      const membership = await organizations.vouchedMembership(organizationId, userId, role, update, now, trx)
      const changed = membership?.previous !== undefined && membership.previous !== membership.role
      const revokeAccess = changed
        ? await sessions.organizationChangedWithin(organizationId, userId, { forget: false }, trx)
        : async () => {}
      return { membership, revokeAccess }
    }, ({ membership }) => {
      if (membership === undefined || membership.previous === membership.role) return []
      const details = { organization_id: organizationId, role: membership.role, connection_id: connection.id }
      return membership.previous === undefined
        ? [{ event: 'membership.added', outcome: 'success', actorId: userId, targetId: userId, details }]
        : [{ event: 'membership.role_changed', outcome: 'success', actorId: userId, targetId: userId, details: { ...details, previous_role: membership.previous } }]
    })
    if (outcome.membership === undefined) throw new Errors.NOT_FOUND('Organization')
    await outcome.revokeAccess()
  }
}
