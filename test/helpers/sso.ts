/**
 * What the enterprise sign-in tests share: an organization with a verified domain and a SAML
 * connection to an identity provider, and the browser's part of a sign-in (the redirect to the
 * IdP, the form post to the ACS, the browser application's exchange), through `app.inject`.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { type Account, createAccount } from './accounts.js'
import { OrganizationHarness } from './organizations.js'
import { authnRequestOf, TestIdentityProvider } from './servers/saml-identity-provider.js'

export const PUBLIC_URL = 'https://users.example.test'
export const APPLICATION = 'https://app.example.test/callback'
/** The configuration the SSO tests run with: the service's address, and where browser applications may be sent back. */
export const SSO_ENV = { PUBLIC_URL, OAUTH_REDIRECT_URLS: APPLICATION }
/** As SSO_ENV, the service on this machine (development): an IdP beside it may be reached over http. */
export const LOCAL_SSO_ENV = { PUBLIC_URL: 'http://localhost:3000', OAUTH_REDIRECT_URLS: APPLICATION }

let domainCounter = 0
/** A domain no other test of this process uses. */
export const uniqueDomain = (prefix = 'corp') => `${prefix}-${process.pid}-${domainCounter++}.example`

export interface Started { relayState: string, requestId: string, verifier: string, location: string }

export class SsoHarness extends OrganizationHarness {
  /** A claim of `domain` by the organization, verified by an operator. */
  async verifiedDomain (owner: Account, organizationId: string, domain: string): Promise<void> {
    const claim = await this.call(owner, 'POST', `/organizations/${organizationId}/domains`, { domain })
    const operator = await createAccount(this.app, { roles: ['super_admin'] })
    const verified = await this.call(operator, 'POST', `/organizations/${organizationId}/domains/${claim.json().data.id}/verify`, { method: 'operator' })
    if (verified.statusCode !== 200) throw new Error(`domain not verified: ${verified.body}`)
  }

  /** A team (owner, admin, member) with a verified domain and a connection to a new IdP, groups mapped as given. */
  async connected (roleMapping: Record<string, string> = { 'Acme Admins': 'admin' }) {
    const team = await this.team('Acme')
    const domain = uniqueDomain()
    await this.verifiedDomain(team.owner, team.organization.id, domain)
    const idp = new TestIdentityProvider()
    const created = await this.call(team.owner, 'POST', `/organizations/${team.organization.id}/sso-connections`, {
      name: 'Acme IdP', idp_metadata_xml: idp.metadata(), role_mapping: roleMapping
    })
    if (created.statusCode !== 201) throw new Error(`connection not created: ${created.body}`)
    const connection = created.json().data
    const spMetadata = (await this.app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/metadata` })).body
    return { ...team, domain, idp, connection, spMetadata }
  }

  /** A browser application starts a sign-in at `path`: the PKCE verifier it keeps, and where the browser is sent. */
  async startAt (path: string): Promise<{ verifier: string, location: string }> {
    const verifier = randomBytes(32).toString('base64url')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    const query = new URLSearchParams({ redirect_to: APPLICATION, code_challenge: challenge, code_challenge_method: 'S256' })
    const response = await this.app.inject({ method: 'GET', url: `${path}?${query}` })
    if (response.statusCode !== 302) throw new Error(`sign-in not started: ${response.body}`)
    return { verifier, location: String(response.headers.location) }
  }

  /** The browser application starts a SAML sign-in: the redirect to the IdP, and the AuthnRequest in it. */
  async start (connectionId: string): Promise<Started> {
    const { verifier, location } = await this.startAt(`/api/v1/sso/saml/${connectionId}/sign-in`)
    const request = authnRequestOf(location)
    return { relayState: request.relayState, requestId: request.id, verifier, location }
  }

  /** The IdP's auto-posting form reaching the ACS. */
  async acs (connectionId: string, samlResponse: string, relayState: string): Promise<LightMyRequestResponse> {
    return await this.app.inject({
      method: 'POST',
      url: `/api/v1/sso/saml/${connectionId}/acs`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: relayState }).toString()
    })
  }

  /** Where the ACS (or an OpenID callback) sent the browser back to: the application, with `code` or `error`. */
  static back (response: LightMyRequestResponse): URL {
    if (response.statusCode !== 302) throw new Error(`the ACS answered ${response.statusCode}: ${response.body}`)
    return new URL(String(response.headers.location))
  }

  /** The browser application's exchange of the code: the token pair. */
  async exchange (code: string, verifier: string) {
    return await this.app.inject({ method: 'POST', url: '/api/v1/auth/oauth/exchange', payload: { code, code_verifier: verifier } })
  }
}
