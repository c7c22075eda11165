import { randomBytes } from 'node:crypto'
import type { OAuthAuthorizeQuery, OAuthCallbackQuery } from '../../../schemas/auth.js'
import { Errors, validationFailed } from '../../errors.js'
import { exchangeCode, pkcePair, providerError, providerGet } from '../../federation/client.js'
import { idTokenClaims } from '../../federation/id-token.js'
import { IdpRefusal } from '../../federation/refusal.js'
import type { SecretBox } from '../../security/secret-box.js'
import type { PendingAuthorization, SingleUseStore } from '../../store/single-use.js'
import type { StoredOidcConnection } from '../../store/sso-connections.js'
import type { RequestContext } from '../context.js'
import { type FederatedSignInService, STATE_TTL_MS } from '../sign-in/index.js'
import { type AssertedPerson, claimedPerson, openIdPerson } from './assertion-profile.js'
import { openIdClientOf } from './connections.js'
import type { OrganizationIssuers } from './oidc-issuers.js'
import { connectionProvider, type OrganizationSignIn, providerConnection } from './organization-sign-in.js'

export interface OidcSignInDependencies {
  states: SingleUseStore<PendingAuthorization>
  federation: FederatedSignInService
  organizationSignIn: OrganizationSignIn
  issuers: OrganizationIssuers
  clientSecrets: SecretBox
  publicUrl: string
}

/**
 * Sign-in through an organization's own OpenID provider (docs/api.md, "Enterprise sign-in"):
 * the authorization code flow with state, PKCE and a nonce, as for an operator's provider by
 * issuer, every request to the provider under the outbound rule (OrganizationIssuers); for
 * browser applications only (a one-time code back to `redirect_to`). The ID token is validated
 * (src/federation/id-token.ts); what follows is every connection's (OrganizationSignIn).
 */
export class OidcSignInService {
  constructor (private readonly deps: OidcSignInDependencies) {}

  /** The provider's authorization URL with a fresh state, nonce and PKCE challenge, the flow kept server-side. */
  async start (connectionId: string, query: OAuthAuthorizeQuery): Promise<string> {
    const connection = await this.deps.organizationSignIn.usable(connectionId, 'oidc')
    const { redirectTo, codeChallenge } = this.deps.federation.browserReturn(query)
    if (redirectTo === null || codeChallenge === null) {
      throw validationFailed([{ path: '/redirect_to', message: 'is required: SSO sign-in ends in a browser application' }])
    }
    const { metadata } = await this.deps.issuers.of(connection.oidc.issuer).discover()
    const state = randomBytes(32).toString('base64url')
    const nonce = randomBytes(32).toString('base64url')
    const pkce = pkcePair()
    await this.deps.states.put(state, {
      provider: connectionProvider(connection.id), codeVerifier: pkce.verifier, nonce, redirectTo, codeChallenge
    }, STATE_TTL_MS)
    const url = new URL(metadata.authorizationEndpoint)
    const params = {
      client_id: connection.oidc.clientId,
      redirect_uri: openIdClientOf(this.deps.publicUrl, connection.id).redirectUri,
      response_type: 'code',
      scope: connection.oidc.scopes.join(' '),
      state,
      nonce,
      code_challenge: pkce.challenge,
      code_challenge_method: 'S256'
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return url.href
  }

  /**
   * The callback (one for every connection): the flow its state names (else INVALID_OAUTH_STATE:
   * there is nowhere to send the browser), then the browser back to the application with a
   * one-time code, or the error's code.
   */
  async finish (context: RequestContext, query: OAuthCallbackQuery): Promise<string> {
    const pending = query.state === undefined || query.state === '' ? null : await this.deps.states.take(query.state)
    const connectionId = pending === null ? null : providerConnection(pending.provider)
    const redirectTo = pending?.redirectTo ?? null
    const codeChallenge = pending?.codeChallenge ?? null
    if (pending === null || connectionId === null || redirectTo === null || codeChallenge === null) {
      throw new Errors.INVALID_OAUTH_STATE()
    }
    return await this.deps.organizationSignIn.complete(context, connectionId, { redirectTo, codeChallenge },
      async () => await this.#claimed(connectionId, query, pending))
  }

  /** The person the provider's ID token names, once the response and the token are checked. */
  async #claimed (
    connectionId: string, query: OAuthCallbackQuery, pending: PendingAuthorization
  ): Promise<{ connection: StoredOidcConnection, person: AssertedPerson }> {
    const { issuers, clientSecrets, publicUrl } = this.deps
    const connection = await this.deps.organizationSignIn.usable(connectionId, 'oidc')
    const { issuer, clientId, sealedClientSecret, tokenEndpointAuthMethod } = connection.oidc
    const { metadata, keys } = await issuers.of(issuer).discover()
    // A response from another issuer (a mix-up), or one without `iss` from a provider that always sends it.
    if (query.iss === undefined ? metadata.issParameterSupported : query.iss !== metadata.issuer) {
      throw new IdpRefusal('the authorization response is not from the connection\'s issuer')
    }
    if (query.error === 'access_denied') throw new Errors.OAUTH_ACCESS_DENIED()
    if (query.error !== undefined) throw providerError(`authorization refused (${query.error.slice(0, 100)})`)
    if (query.code === undefined || query.code === '') throw providerError('no authorization code')
    const clientSecret = clientSecrets.open(sealedClientSecret)
    if (clientSecret === null) throw new Error(`the client secret of SSO connection ${connection.id} is sealed under a key SEALING_PREVIOUS_KEYS lacks`)
    const tokens = await exchangeCode({
      tokenUrl: metadata.tokenEndpoint,
      clientId,
      clientSecret,
      redirectUri: openIdClientOf(publicUrl, connection.id).redirectUri,
      headers: {},
      authentication: tokenEndpointAuthMethod
    }, query.code, pending.codeVerifier, issuers.transport)
    if (tokens.idToken === null) throw providerError('no ID token in the token response')
    let claims
    try {
      claims = await idTokenClaims(tokens.idToken, keys, { issuer, clientId, nonce: pending.nonce ?? '' })
    } catch (error) {
      if (error instanceof Errors.OAUTH_PROVIDER_ERROR) throw new IdpRefusal(error.message)
      throw error
    }
    // Some providers (Entra ID unless told otherwise) leave the address out of the ID token: userinfo,
    // about the same subject, fills what the token lacks.
    if (claimedPerson(claims, connection.attributeMapping) === null && metadata.userinfoEndpoint !== null) {
      const userinfo = await providerGet(issuers.transport)(metadata.userinfoEndpoint, tokens.accessToken) as
        Record<string, unknown> | null
      if (userinfo?.sub !== claims.sub) throw new IdpRefusal('userinfo describes another subject')
      // The address and whether it is verified come together, from userinfo; the token's other claims win.
      const { email: _email, email_verified: _verified, ...signed } = claims
      claims = { ...userinfo, ...signed }
    }
    return { connection, person: openIdPerson(issuer, claims, connection.attributeMapping) }
  }
}
