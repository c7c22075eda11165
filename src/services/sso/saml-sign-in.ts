import { randomBytes } from 'node:crypto'
import type { OAuthAuthorizeQuery } from '../../../schemas/auth.js'
import type { SamlAcsBody } from '../../../schemas/sso.js'
import { Errors, validationFailed } from '../../errors.js'
import { authnRequestUrl, SAML_CLOCK_SKEW_MS, SamlRefusal, validateResponse } from '../../federation/saml.js'
import type { FirstUses, PendingAuthorization, SingleUseStore } from '../../store/single-use.js'
import type { SsoConnectionsRepository, StoredSamlConnection } from '../../store/sso-connections.js'
import type { RequestContext } from '../context.js'
import { type FederatedSignInService, STATE_TTL_MS } from '../sign-in/index.js'
import { type AssertedPerson, assertedPerson } from './assertion-profile.js'
import { serviceProviderOf } from './connections.js'
import { connectionProvider, type OrganizationSignIn } from './organization-sign-in.js'

export interface SamlSignInDependencies {
  ssoConnections: SsoConnectionsRepository
  states: SingleUseStore<PendingAuthorization>
  assertionIds: FirstUses
  federation: FederatedSignInService
  organizationSignIn: OrganizationSignIn
  publicUrl: string
  now?: () => number
}

/**
 * Sign-in through an organization's SAML identity provider (docs/api.md, "Enterprise
 * sign-in"): SP-initiated, for browser applications (a one-time code back to `redirect_to`,
 * exchanged with the PKCE verifier, as for a provider's sign-in); the response is checked
 * (src/federation/saml.ts) and spent once; what follows is every connection's
 * (OrganizationSignIn).
 */
export class SamlSignInService {
  readonly #now: () => number

  constructor (private readonly deps: SamlSignInDependencies) {
    this.#now = deps.now ?? Date.now
  }

  /** The IdP's URL with a fresh AuthnRequest; the flow (its request ID, the way back) kept server-side. */
  async start (connectionId: string, query: OAuthAuthorizeQuery): Promise<string> {
    const connection = await this.deps.organizationSignIn.usable(connectionId, 'saml')
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
    if (pending === null) return await this.#idpInitiated(connectionId)
    const { redirectTo, codeChallenge } = pending
    if (pending.provider !== connectionProvider(connectionId) || redirectTo === null || codeChallenge === null) {
      throw new Errors.INVALID_OAUTH_STATE()
    }
    return await this.deps.organizationSignIn.complete(context, connectionId, { redirectTo, codeChallenge },
      async () => await this.#asserted(connectionId, body.SAMLResponse, pending.nonce))
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

  /** The person a valid, unspent response names. */
  async #asserted (
    connectionId: string, samlResponse: string, requestId: string | null
  ): Promise<{ connection: StoredSamlConnection, person: AssertedPerson }> {
    const connection = await this.deps.organizationSignIn.usable(connectionId, 'saml')
    const sp = serviceProviderOf(this.deps.publicUrl, connection.id)
    const assertion = await validateResponse(sp, connection.idp, samlResponse, requestId)
    const ttl = assertion.notOnOrAfter + SAML_CLOCK_SKEW_MS - this.#now()
    if (!await this.deps.assertionIds.firstUse(`${connection.idp.entityId} ${assertion.id}`, Math.max(ttl, 1000))) {
      throw new SamlRefusal('the assertion was used already (a replay)')
    }
    const person = assertedPerson(assertion, connection.attributeMapping)
    if (person === null) throw new SamlRefusal('the assertion names no usable e-mail address')
    return { connection, person }
  }
}
