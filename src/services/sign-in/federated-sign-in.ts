import { randomBytes } from 'node:crypto'
import type { Identity, OAuthAuthorizeQuery, OAuthCallbackQuery } from '../../../schemas/auth.js'
import { type Config, isBuiltIn, type OAuthProviderConfig } from '../../config/index.js'
import { Errors, rethrowServiceError, validationFailed } from '../../errors.js'
import type { IdentitiesRepository } from '../../store/identities.js'
import type { PendingAuthorization, PendingExchange, SingleUseStore } from '../../store/single-use.js'
import type { UsersRepository } from '../../store/users.js'
import {
  exchangeCode, fetchProfile, fetchTransport, pkceChallenge, pkcePair, providerError, PROVIDER_TIMEOUT_MS,
  type ProviderTransport
} from '../../federation/client.js'
import { validateIdToken } from '../../federation/id-token.js'
import { OidcIssuer } from '../../federation/issuer.js'
import { isUserEmail, type OAuthProfile, OAUTH_PROVIDER_REGISTRY, readOidcProfile, usableProfile } from '../../federation/providers.js'
import { sameText } from '../../security/constant-time.js'
import type { AccountClaims } from './account-claims.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import { callerOf, type RequestContext } from '../context.js'
import type { Notices } from '../messaging/index.js'
import type { InlineProof, ReauthenticationService } from './reauthentication.js'

/** State is single use and expires after 10 minutes (docs/api.md, "Authorize"). */
export const STATE_TTL_MS = 10 * 60 * 1000
/** A browser application's one-time code is good for 60 seconds (docs/api.md, "Browser applications"). */
export const EXCHANGE_CODE_TTL_MS = 60 * 1000

export interface FederatedSignInOptions {
  providers: Config['oauth']
  /** OAUTH_REDIRECT_URLS, each ending at a path boundary; null: browser applications are refused. */
  redirectUrls: string[] | null
  states: SingleUseStore<PendingAuthorization>
  exchanges: SingleUseStore<PendingExchange>
  users: UsersRepository
  identities: IdentitiesRepository
  claims: AccountClaims
  notices: Notices
  reauthentication: ReauthenticationService
  audit: AuditTrail
  timeoutMs?: number
}

export interface FederatedSignIn { userId: string, provider: string, created: boolean, linked: boolean }

/** A callback whose state was this browser's: the flow it finishes. */
export interface ProviderFlow { provider: string, pending: PendingAuthorization }

/** A display name within the user rules (2–100 characters): the profile's, else the address's local part. */
export function displayName (profile: Pick<OAuthProfile, 'name'>, email: string): string {
  const candidates = [profile.name, email.split('@')[0]]
  const name = candidates.find((candidate) => candidate !== null && candidate !== undefined && [...candidate].length >= 2) ?? 'User'
  // By code point, as the name rules count: a cut must not split a surrogate pair.
  return [...name].slice(0, 100).join('')
}

/**
 * Sign-in through external providers with state, PKCE and, for OpenID providers, a nonce and
 * a validated ID token (docs/api.md, "OAuth sign-in").
 */
export class FederatedSignInService {
  readonly #issuers = new Map<string, OidcIssuer>()
  readonly #transport: ProviderTransport

  constructor (private readonly options: FederatedSignInOptions) {
    const timeoutMs = options.timeoutMs ?? PROVIDER_TIMEOUT_MS
    this.#transport = fetchTransport(timeoutMs)
    for (const [key, config] of Object.entries(options.providers)) {
      if (config.issuer === null) continue
      this.#issuers.set(key, new OidcIssuer(config.issuer, { transport: this.#transport, timeoutMs }))
    }
  }

  /** The enabled provider for a key, matched case-insensitively; else UNSUPPORTED_PROVIDER. */
  provider (key: string): { key: string, config: OAuthProviderConfig } {
    const normalized = key.toLowerCase()
    const config = Object.hasOwn(this.options.providers, normalized) ? this.options.providers[normalized] : undefined
    if (config === undefined) throw new Errors.UNSUPPORTED_PROVIDER(key)
    return { key: normalized, config }
  }

  /** Reads every issuer's discovery document: the providers that cannot be used yet, and why (logged at start-up). */
  async discoverAll (): Promise<Array<{ provider: string, reason: string }>> {
    const failures: Array<{ provider: string, reason: string }> = []
    await Promise.all([...this.#issuers].map(async ([provider, issuer]) => {
      try {
        await issuer.discover()
      } catch (error) {
        failures.push({ provider, reason: error instanceof Error ? error.message : String(error) })
      }
    }))
    return failures
  }

  /**
   * The provider's authorization URL with a fresh state, PKCE challenge and (OpenID) nonce,
   * all kept server-side; the state also goes to the browser, in a cookie the route sets.
   */
  async authorize (key: string, query: OAuthAuthorizeQuery): Promise<{ url: string, state: string }> {
    const { key: provider, config } = this.provider(key)
    const browser = this.browserReturn(query)
    const { authUrl, discovered } = await this.#endpoints(provider, config)
    const state = randomBytes(32).toString('base64url')
    const nonce = discovered === null ? null : randomBytes(32).toString('base64url')
    const { verifier, challenge } = pkcePair()
    await this.options.states.put(state, { provider, codeVerifier: verifier, nonce, ...browser }, STATE_TTL_MS)
    const url = new URL(authUrl)
    const params = {
      client_id: config.clientId,
      redirect_uri: config.redirectUri,
      response_type: 'code',
      scope: config.scopes.join(' '),
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...(nonce !== null && { nonce }),
      ...(isBuiltIn(provider) && OAUTH_PROVIDER_REGISTRY[provider].extraAuthorizationParams)
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return { url: url.toString(), state }
  }

  /** A provider by issuer's discovered endpoints and keys, else a built-in provider's fixed endpoints. */
  async #endpoints (provider: string, config: OAuthProviderConfig) {
    const builtIn = isBuiltIn(provider) ? OAUTH_PROVIDER_REGISTRY[provider] : null
    if (config.issuer === null) {
      return {
        authUrl: config.authUrl, tokenUrl: config.tokenUrl, userinfoUrl: config.userinfoUrl, builtIn, discovered: null
      }
    }
    const issuer = this.#issuers.get(provider)
    if (issuer === undefined) throw new Error(`provider ${provider} has an issuer but no discovery`)
    const discovered = await issuer.discover()
    const {
      authorizationEndpoint: authUrl, tokenEndpoint: tokenUrl, userinfoEndpoint: userinfoUrl
    } = discovered.metadata
    return { authUrl, tokenUrl, userinfoUrl, builtIn, discovered }
  }

  /**
   * A browser application's return URL and PKCE challenge (docs/api.md, "Browser
   * applications"): the URL must be one `admittedReturn` admits.
   */
  browserReturn (query: OAuthAuthorizeQuery): { redirectTo: string | null, codeChallenge: string | null } {
    const { redirect_to: redirectTo, code_challenge: codeChallenge, code_challenge_method: method } = query
    if (redirectTo === undefined && codeChallenge === undefined && method === undefined) {
      return { redirectTo: null, codeChallenge: null }
    }
    if (this.options.redirectUrls === null) throw validationFailed([{ path: '/redirect_to', message: 'sign-in for browser applications is not enabled' }])
    const issues = []
    const target = redirectTo === undefined ? null : this.admittedReturn(redirectTo)
    if (target === null) issues.push({ path: '/redirect_to', message: 'must be one of the allowed redirect URLs or a path below one' })
    if (codeChallenge === undefined) issues.push({ path: '/code_challenge', message: 'is required with redirect_to' })
    if (method === undefined) issues.push({ path: '/code_challenge_method', message: 'must be S256' })
    if (issues.length > 0 || target === null || codeChallenge === undefined) throw validationFailed(issues)
    return { redirectTo: target, codeChallenge }
  }

  /**
   * A URL the service may send a browser to, as parsed; null unless, without credentials, it is
   * on an entry of OAUTH_REDIRECT_URLS's origin, at the entry's path or below it (`/cb` admits
   * `/cb/x`, not `/cbevil`). The parser resolves `..` and `%2e%2e` segments, so the path as
   * given is checked for them, and for an encoded `/` or `\` that a server behind the
   * application might decode into one.
   */
  admittedReturn (url: string): string | null {
    const allowed = this.options.redirectUrls ?? []
    const target = URL.canParse(url) ? new URL(url) : null
    const givenPath = url.split(/[?#]/, 1)[0] ?? ''
    const admitted = target !== null && target.username === '' && target.password === '' &&
      !/%2e|%2f|%5c/i.test(givenPath) && !/(^|[/\\])\.\.([/\\]|$)/.test(givenPath) &&
      allowed.some((entry) => {
        const base = new URL(entry)
        const below = base.pathname.endsWith('/') ? base.pathname : `${base.pathname}/`
        return target.origin === base.origin && (target.pathname === base.pathname || target.pathname.startsWith(below))
      })
    return admitted ? target.href : null
  }

  /**
   * The flow a callback finishes: its state must be the one this browser's cookie holds
   * (login CSRF), and one the service issued, unused, within 10 minutes, for this provider.
   */
  async takeState (key: string, query: OAuthCallbackQuery, browserState: string | undefined): Promise<ProviderFlow> {
    const { key: provider } = this.provider(key)
    const state = query.state ?? ''
    if (state === '' || browserState === undefined || !sameText(state, browserState)) throw new Errors.INVALID_OAUTH_STATE()
    const pending = await this.options.states.take(state)
    if (pending === null || pending.provider !== provider) throw new Errors.INVALID_OAUTH_STATE()
    return { provider, pending }
  }

  /**
   * Checks the response's issuer, exchanges the code, reads the profile (an OpenID
   * provider's from its validated ID token), then finds the linked user, links one by
   * verified e-mail, or creates one with role `user`. Nothing is written unless every
   * provider call succeeded.
   */
  async finish (
    context: RequestContext,
    { provider, pending }: ProviderFlow,
    query: OAuthCallbackQuery
  ): Promise<FederatedSignIn> {
    const { config } = this.provider(provider)
    const { tokenUrl, userinfoUrl, builtIn, discovered } = await this.#endpoints(provider, config)
    // A response from another issuer (a mix-up), or one without `iss` from a provider that always
    // sends it, is refused (docs/security.md, "Provider sign-in").
    if (discovered !== null && (query.iss === undefined
      ? discovered.metadata.issParameterSupported
      : query.iss !== discovered.metadata.issuer)) {
      throw providerError('the authorization response is not from the configured issuer')
    }
    if (query.error === 'access_denied') throw new Errors.OAUTH_ACCESS_DENIED()
    if (query.error !== undefined) throw providerError(`authorization refused (${query.error.slice(0, 100)})`)
    if (query.code === undefined || query.code === '') throw providerError('no authorization code')
    const transport = this.#transport
    const tokens = await exchangeCode({
      tokenUrl,
      clientId: config.clientId,
      clientSecret: config.clientSecret,
      redirectUri: config.redirectUri,
      headers: builtIn?.tokenRequestHeaders ?? {}
    }, query.code, pending.codeVerifier, transport)
    if (discovered === null) {
      if (builtIn === null || userinfoUrl === null) throw new Error(`provider ${provider} has no profile reader`)
      return await this.accountFor(
        context, provider, await fetchProfile(builtIn.readProfile, userinfoUrl, tokens.accessToken, transport)
      )
    }
    if (tokens.idToken === null) throw providerError('no ID token in the token response')
    let profile = await validateIdToken(tokens.idToken, discovered.keys, { issuer: discovered.metadata.issuer, clientId: config.clientId, nonce: pending.nonce ?? '' })
    // Some providers leave the e-mail out of the ID token; userinfo has it, and must describe the
    // same subject (docs/api.md, "Providers by issuer").
    if (profile.email === null && userinfoUrl !== null) {
      const more = await fetchProfile(readOidcProfile, userinfoUrl, tokens.accessToken, transport)
      if (more.subject !== profile.subject) throw providerError('userinfo describes another subject')
      profile = more
    }
    try {
      profile = usableProfile(profile)
    } catch (error) {
      throw providerError(error instanceof Error ? error.message : 'unusable profile')
    }
    return await this.accountFor(context, provider, profile)
  }

  /** A one-time code for a browser application, good for 60 seconds with the verifier of its challenge. */
  async issueExchangeCode (userId: string, provider: string, codeChallenge: string): Promise<string> {
    const code = randomBytes(32).toString('base64url')
    await this.options.exchanges.put(code, { userId, provider, codeChallenge }, EXCHANGE_CODE_TTL_MS)
    return code
  }

  /** The sign-in a one-time code stands for; the code is spent whether or not the verifier is right. */
  async takeExchangeCode (code: string, codeVerifier: string): Promise<{ userId: string, provider: string }> {
    const pending = await this.options.exchanges.take(code)
    if (pending === null || !sameText(pkceChallenge(codeVerifier), pending.codeChallenge)) {
      throw new Errors.INVALID_OAUTH_STATE()
    }
    return { userId: pending.userId, provider: pending.provider }
  }

  async identities (context: RequestContext): Promise<Identity[]> {
    return await this.options.identities.listFor(callerOf(context).id)
  }

  /**
   * Unlinks one of the caller's identities, unless the account could then not be signed in to
   * at all; a sensitive change (a proof first), audited and told to the owner.
   */
  async unlink (context: RequestContext, id: string, proof: InlineProof): Promise<void> {
    const caller = callerOf(context)
    const { users, identities, reauthentication, notices, audit } = this.options
    const userId = caller.id
    await reauthentication.require(context, proof)
    const user = await users.findById(userId)
    if (user === undefined) throw new Errors.INVALID_TOKEN()
    const outcome = await audit.recordChange(context, async (trx) => {
      const result = await identities.unlinkUnlessLast(userId, id, trx)
      if (typeof result !== 'string') await notices.add(user.email, 'identity_unlinked', trx)
      return result
    }, (result) => typeof result === 'string' ? [] : [{ event: 'identity.unlinked', outcome: 'success', actorId: userId, targetId: userId, details: { provider: result.unlinked.provider } }])
    if (typeof outcome !== 'string') notices.deliver()
    if (outcome === 'not_found') throw new Errors.NOT_FOUND('Identity')
    if (outcome === 'last') throw new Errors.CONFLICT('This identity is the account\'s only way to sign in; set a password, add a passkey or link another first')
  }

  /**
   * The account a provider's profile signs in (an organization's identity provider too,
   * src/services/sso/): a new link, and a new account, are stored with their audit entries
   * (`identity.linked`, `user.created`). The account-claiming rule (docs/security.md, "Account claiming"): a
   * provider that did not verify the address never links to an account nor creates one on a
   * taken address, and an account it creates is unclaimed; one that verified it claims an
   * unclaimed account with that address, removing whatever was attached to it before.
   */
  async accountFor (context: RequestContext, provider: string, profile: OAuthProfile): Promise<FederatedSignIn> {
    const { users, identities, audit } = this.options
    const linkedUser = await identities.userOf(provider, profile.subject)
    if (linkedUser !== undefined) {
      // An account this identity created while its address was unverified is claimed once the provider verifies it.
      // Read only when the provider vouches for the address: a linked sign-in otherwise costs nothing more.
      if (profile.emailVerified && profile.email !== null &&
        (await users.findByEmail(profile.email))?.id === linkedUser &&
        !(await users.findPrincipal(linkedUser))?.claimed) await this.#claim(context, provider, profile, linkedUser, 'identity.linked')
      return { userId: linkedUser, provider, created: false, linked: false }
    }
    if (profile.email === null) throw new Errors.OAUTH_PROVIDER_ERROR('the profile has no e-mail address')
    if (!isUserEmail(profile.email)) throw new Errors.OAUTH_PROVIDER_ERROR('the profile\'s e-mail address is not one a user may have')
    const existing = await users.findByEmail(profile.email)
    if (existing !== undefined) {
      // Linking on an address the provider has not verified would hand the account to whoever
      // typed it in there; one whose current address is unverified here after a change is not
      // the provider's to take either.
      if (!profile.emailVerified) throw new Errors.EMAIL_ALREADY_REGISTERED()
      const claimed = (await users.findPrincipal(existing.id))?.claimed ?? false
      if (!claimed) {
        await this.#claim(context, provider, profile, existing.id, null)
        return { userId: existing.id, provider, created: false, linked: true }
      }
      if (!existing.email_verified) throw new Errors.EMAIL_ALREADY_REGISTERED()
      const email = profile.email
      await audit.recordChange(context,
        async (trx) => { await identities.link(provider, profile.subject, existing.id, email, trx) },
        () => [{ event: 'identity.linked', outcome: 'success', actorId: existing.id, targetId: existing.id, details: { provider } }])
      return { userId: existing.id, provider, created: false, linked: true }
    }
    const newUser = { email: profile.email, name: displayName(profile, profile.email), passwordHash: null, roles: ['user' as const], emailVerified: profile.emailVerified }
    const user = await audit.recordChange(context, async (trx) => {
      const created = await users.create(newUser, trx).catch(rethrowServiceError)
      await identities.link(provider, profile.subject, created.id, newUser.email, trx)
      return created
    }, (created) => [
      { event: 'user.created', outcome: 'success', actorId: created.id, targetId: created.id, details: { provider } },
      { event: 'identity.linked', outcome: 'success', actorId: created.id, targetId: created.id, details: { provider } }
    ])
    return {
      userId: (await identities.userOf(provider, profile.subject)) ?? user.id, provider, created: true, linked: true
    }
  }

  /**
   * A provider that verified the address claims the unclaimed account that has it: the
   * identity is linked (unless `linkedAlready`), and everything attached before, the first
   * registrant's password included, is removed in the same transaction.
   */
  async #claim (context: RequestContext, provider: string, profile: OAuthProfile, userId: string, linkedAlready: 'identity.linked' | null): Promise<void> {
    const { identities, claims, audit } = this.options
    const email = profile.email ?? ''
    const proved = await audit.recordChange(context, async (trx) => {
      if (linkedAlready === null) await identities.link(provider, profile.subject, userId, email, trx)
      return await claims.prove(userId, email, {
        keepIdentity: { provider, subject: profile.subject }, removePassword: true
      }, trx)
    }, (proved): AuditChange[] => [
      ...(linkedAlready === null ? [{ event: 'identity.linked' as const, outcome: 'success' as const, actorId: userId, targetId: userId, details: { provider } }] : []),
      { event: 'email.verified', outcome: 'success', actorId: userId, targetId: userId, details: { provider } },
      ...proved?.entries ?? []
    ])
    claims.deliver()
    await proved?.revokeAccess()
  }
}
