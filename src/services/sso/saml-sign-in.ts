import { randomBytes } from 'node:crypto'
import type { OAuthAuthorizeQuery } from '../../../schemas/auth.js'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import type { SamlAcsBody } from '../../../schemas/sso.js'
import { Errors, isServiceError, validationFailed } from '../../errors.js'
import { usableProfile } from '../../federation/providers.js'
import { authnRequestUrl, SAML_CLOCK_SKEW_MS, SamlRefusal, validateResponse } from '../../federation/saml.js'
import { emailDomain, type OrganizationDomainsRepository } from '../../store/organization-domains.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import type { ScimResourcesRepository } from '../../store/scim.js'
import type { FirstUses, PendingAuthorization, SingleUseStore } from '../../store/single-use.js'
import type { StoredSsoConnection, SsoConnectionsRepository } from '../../store/sso-connections.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditTrail } from '../audit/index.js'
import type { RequestContext } from '../context.js'
import type { SessionService } from '../sessions/index.js'
import { type FederatedSignInService, type SignInService, STATE_TTL_MS } from '../sign-in/index.js'
import { assertedPerson, mappedRole } from './assertion-profile.js'
import { serviceProviderOf } from './connections.js'

export interface SamlSignInDependencies {
  ssoConnections: SsoConnectionsRepository
  users: UsersRepository
  organizations: OrganizationsRepository
  organizationDomains: OrganizationDomainsRepository
  scimResources: ScimResourcesRepository
  states: SingleUseStore<PendingAuthorization>
  assertionIds: FirstUses
  federation: FederatedSignInService
  signIn: SignInService
  sessions: SessionService
  audit: AuditTrail
  publicUrl: string
  now?: () => number
}

/** The provider an organization's connection signs in as: its identities are linked under it. */
export const connectionProvider = (connectionId: string) => `sso:${connectionId}`

/**
 * Sign-in through an organization's SAML identity provider (docs/api.md, "Enterprise
 * sign-in"): SP-initiated, for browser applications (a one-time code back to `redirect_to`,
 * exchanged with the PKCE verifier, as for a provider's sign-in); the response is checked
 * (src/federation/saml.ts), spent once, and must name an address of a domain the organization
 * holds verified; the account is found, claimed or made under the account-claiming rule, and,
 * once it may sign in, joins the organization with the role its groups map to.
 */
export class SamlSignInService {
  readonly #now: () => number

  constructor (private readonly deps: SamlSignInDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /**
   * A connection people may sign in through: enabled, of an organization holding a verified
   * domain (until then nobody could, and its IdP's URL is no place to send browsers to).
   */
  async #usable (connectionId: string): Promise<StoredSsoConnection> {
    const connection = await this.deps.ssoConnections.find(connectionId)
    if (connection === undefined || !connection.enabled) throw new Errors.NOT_FOUND('SSO connection')
    if (!await this.deps.organizationDomains.holdsAnyVerified(connection.organizationId)) {
      throw new Errors.CONFLICT('The organization holds no verified domain: nobody signs in through its connections yet')
    }
    return connection
  }

  /** The IdP's URL with a fresh AuthnRequest; the flow (its request ID, the way back) kept server-side. */
  async start (connectionId: string, query: OAuthAuthorizeQuery): Promise<string> {
    const connection = await this.#usable(connectionId)
    const { redirectTo, codeChallenge } = this.deps.federation.browserReturn(query)
    if (redirectTo === null || codeChallenge === null) {
      throw validationFailed([{ path: '/redirect_to', message: 'is required: SSO sign-in ends in a browser application' }])
    }
    const state = randomBytes(32).toString('base64url')
    const sp = serviceProviderOf(this.deps.publicUrl, connection.id)
    const { url, requestId } = await authnRequestUrl(sp, connection.idp, state)
    await this.deps.states.put(state, {
      provider: connectionProvider(connection.id), codeVerifier: '', nonce: requestId, redirectTo, codeChallenge
    }, STATE_TTL_MS)
    return url
  }

  /**
   * The ACS: the flow its RelayState names (else INVALID_OAUTH_STATE: there is nowhere to send
   * the browser), then the browser back to the application with a one-time code, or with the
   * error's code; each refusal of the response is audited with its reason.
   */
  async finish (context: RequestContext, connectionId: string, body: SamlAcsBody): Promise<string> {
    const pending = body.RelayState === undefined || body.RelayState === '' ? null : await this.deps.states.take(body.RelayState)
    const provider = connectionProvider(connectionId)
    if (pending === null) return await this.#idpInitiated(connectionId)
    if (pending.provider !== provider ||
      pending.redirectTo === null || pending.codeChallenge === null) {
      throw new Errors.INVALID_OAUTH_STATE()
    }
    const back = new URL(pending.redirectTo)
    try {
      const { connection, signIn, role } = await this.#vouched(context, connectionId, body.SAMLResponse, pending.nonce)
      const code = await this.deps.signIn.exchangeCodeFor(context, signIn, pending.codeChallenge)
      await this.#joinOrganization(context, connection, signIn.userId, role)
      back.searchParams.set('code', code)
    } catch (error) {
      if (error instanceof SamlRefusal) {
        await this.deps.audit.recordIn(context, 'auth.login_failed', {
          outcome: 'failure', actorId: null, targetId: null, details: { provider, reason: 'sso_response_rejected', detail: error.message.slice(0, 300) }
        })
        back.searchParams.set('error', 'SSO_RESPONSE_REJECTED')
      } else if (isServiceError(error)) {
        back.searchParams.set('error', error.code)
      } else {
        throw error
      }
    }
    return back.href
  }

  /**
   * A response to no flow of the service's (IdP-initiated): where the connection allows it, the
   * browser goes to the application's login URL, which starts a sign-in of its own (the IdP
   * answers it at once while the person is signed in there). The response signs nobody in: one
   * posted by another site (login CSRF), or stolen and replayed, gains nothing but that redirect.
   */
  async #idpInitiated (connectionId: string): Promise<string> {
    const connection = await this.deps.ssoConnections.find(connectionId)
    // Checked again as it is used: OAUTH_REDIRECT_URLS may have shrunk since the URL was saved.
    const admitted = connection?.enabled === true && connection.idpInitiatedLoginUrl !== null
      ? this.deps.federation.admittedReturn(connection.idpInitiatedLoginUrl)
      : null
    if (connection === undefined || admitted === null) throw new Errors.INVALID_OAUTH_STATE()
    const login = new URL(admitted)
    login.searchParams.set('connection_id', connection.id)
    return login.href
  }

  /** The account a valid, unspent response vouches for, and the role its groups map to. */
  async #vouched (context: RequestContext, connectionId: string, samlResponse: string, requestId: string | null) {
    const { organizationDomains, assertionIds, federation, users } = this.deps
    const connection = await this.#usable(connectionId)
    const sp = serviceProviderOf(this.deps.publicUrl, connection.id)
    const assertion = await validateResponse(sp, connection.idp, samlResponse, requestId)
    const ttl = assertion.notOnOrAfter + SAML_CLOCK_SKEW_MS - this.#now()
    if (!await assertionIds.firstUse(`${connection.idp.entityId} ${assertion.id}`, Math.max(ttl, 1000))) {
      throw new SamlRefusal('the assertion was used already (a replay)')
    }
    const person = assertedPerson(assertion, connection.attributeMapping)
    if (person === null) throw new SamlRefusal('the assertion names no usable e-mail address')
    // The IdP vouches only for addresses of domains its organization proved it holds.
    if (!await organizationDomains.isVerifiedFor(connection.organizationId, emailDomain(person.email))) {
      throw new SamlRefusal('the address is outside the organization\'s verified domains')
    }
    let profile
    try {
      profile = usableProfile({ subject: person.subject, email: person.email, emailVerified: true, name: person.name })
    } catch (error) {
      throw new SamlRefusal(error instanceof Error ? error.message : 'unusable profile')
    }
    const signIn = await federation.accountFor(context, connectionProvider(connection.id), profile)
    // An identity linked before signs its account in by the NameID alone: that account's own
    // address must be one the organization vouches for too (it may have changed since, or the
    // domain been withdrawn).
    const account = await users.findById(signIn.userId)
    const vouched = account !== undefined &&
      await organizationDomains.isVerifiedFor(connection.organizationId, emailDomain(account.email))
    if (!vouched) {
      throw new SamlRefusal('the account\'s address is outside the organization\'s verified domains')
    }
    // The organization's directory has the last word on who belongs (docs/api.md, "SCIM provisioning").
    if (await this.deps.scimResources.deprovisioned(connection.organizationId, signIn.userId)) {
      throw new SamlRefusal('the organization\'s directory deactivated this person')
    }
    return { connection, signIn, role: mappedRole(person.groups, connection.roleMapping, connection.defaultRole) }
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
