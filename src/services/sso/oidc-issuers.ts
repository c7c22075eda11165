import { MAX_PROVIDER_ANSWER_BYTES, PROVIDER_TIMEOUT_MS, providerError, type ProviderTransport } from '../../federation/client.js'
import { OidcIssuer } from '../../federation/issuer.js'
import { endpointUrlProblem, type OutboundPolicy } from '../../security/outbound-addresses.js'
import { OutboundHttp, OutboundRequestError, type Resolver } from '../../security/outbound-http.js'

/** The tenant ID of Entra ID's personal Microsoft accounts (consumers). */
const MICROSOFT_PERSONAL_ACCOUNTS = '9188040d-6c67-4c5b-b112-36a304b66dad'

/** Issuers whose discovery and keys are kept in memory; beyond, the longest unused is dropped. */
const KEPT_ISSUERS = 1000

/** A transport that reaches only what the outbound rule allows: its refusals and failures are the provider's error. */
function outboundTransport (http: OutboundHttp): ProviderTransport {
  return async (request) => {
    let answer
    try {
      answer = await http.request(request)
    } catch (error) {
      if (!(error instanceof OutboundRequestError)) throw error
      throw providerError(error.message)
    }
    if (!answer.complete) throw providerError(`answered more than ${MAX_PROVIDER_ANSWER_BYTES} bytes`)
    return { status: answer.status, text: new TextDecoder().decode(answer.body) }
  }
}

/**
 * Organizations' own OpenID providers (docs/api.md, "Enterprise sign-in"): an issuer an owner
 * entered is reached only under the outbound rule of SSO_METADATA_ALLOWED_NETWORKS (every address
 * checked, no redirects, a deadline, a bounded answer), never with the fetch the operator's
 * providers use; its discovery document and keys are read as an operator's issuer's are.
 */
export class OrganizationIssuers {
  readonly transport: ProviderTransport
  readonly #issuers = new Map<string, OidcIssuer>()

  constructor (private readonly deps: { policy: OutboundPolicy, resolve?: Resolver }) {
    this.transport = outboundTransport(new OutboundHttp({
      policy: deps.policy,
      timeoutMs: PROVIDER_TIMEOUT_MS,
      maxResponseBytes: MAX_PROVIDER_ANSWER_BYTES,
      userAgent: 'users-api-sso/1',
      ...(deps.resolve !== undefined && { resolve: deps.resolve })
    }))
  }

  /**
   * null when `url` may be an issuer (https, no credentials, query or fragment, not a tenant of
   * everyone's accounts), else a sentence for a 400 message.
   */
  issuerProblem (url: string): string | null {
    const problem = endpointUrlProblem(url, this.deps.policy)
    if (problem !== null) return problem
    if (url.includes('?')) return 'must not contain a query (?)'
    // Entra ID's tenant of personal Microsoft accounts: anyone makes one, with any address.
    if (url.toLowerCase().includes(MICROSOFT_PERSONAL_ACCOUNTS)) {
      return 'is the tenant of personal Microsoft accounts, which anyone makes with any address: connect the organization\'s own tenant'
    }
    return null
  }

  /** The issuer at `url`, its discovery shared by every connection naming it. */
  of (url: string): OidcIssuer {
    let issuer = this.#issuers.get(url)
    if (issuer !== undefined) {
      // Most recently used last: the first key is the one to drop.
      this.#issuers.delete(url)
    } else {
      const { policy } = this.deps
      // Each endpoint under the issuer's own rule: https, or http to a loopback host the networks allow.
      issuer = new OidcIssuer(url, {
        transport: this.transport, endpointAdmitted: (endpoint) => endpointUrlProblem(endpoint, policy) === null
      })
      const oldest = this.#issuers.size >= KEPT_ISSUERS ? this.#issuers.keys().next().value : undefined
      if (oldest !== undefined) this.#issuers.delete(oldest)
    }
    this.#issuers.set(url, issuer)
    return issuer
  }
}
