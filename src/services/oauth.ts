import { randomBytes } from 'node:crypto'
import type { OAuthCallbackQuery } from '../../schemas/auth.js'
import type { Config, OAuthProviderConfig } from '../config.js'
import { Errors } from '../errors.js'
import type { IdentitiesRepository } from '../store/identities.js'
import type { UsersRepository } from '../store/users.js'
import { exchangeCode, fetchProfile, pkcePair, PROVIDER_TIMEOUT_MS } from '../oauth/client.js'
import { isUserEmail, type OAuthProfile, type OAuthProvider, OAUTH_PROVIDER_REGISTRY } from '../oauth/providers.js'
import type { OAuthStateStore } from '../oauth/state-store.js'

/** State is single use and expires after 10 minutes (docs/api.md, "Authorize"). */
export const STATE_TTL_MS = 10 * 60 * 1000

export interface OAuthServiceOptions {
  providers: Config['oauth']
  states: OAuthStateStore
  users: UsersRepository
  identities: IdentitiesRepository
  timeoutMs?: number
}

export interface OAuthSignIn { userId: string, provider: string, created: boolean, linked: boolean }

/** A display name within the user rules (2–100 characters). */
function displayName (profile: OAuthProfile, email: string): string {
  const candidates = [profile.name, email.split('@')[0]]
  const name = candidates.find((candidate) => candidate !== null && candidate !== undefined && [...candidate].length >= 2) ?? 'User'
  // By code point, as the name rules count: a cut must not split a surrogate pair.
  return [...name].slice(0, 100).join('')
}

/** Sign-in through external providers with state and PKCE (docs/api.md, "OAuth sign-in"). */
export class OAuthService {
  constructor (private readonly options: OAuthServiceOptions) {}

  /** The enabled provider for a key, matched case-insensitively; else UNSUPPORTED_PROVIDER. */
  provider (key: string): { provider: OAuthProvider, config: OAuthProviderConfig } {
    const normalized = key.toLowerCase()
    const provider = Object.hasOwn(OAUTH_PROVIDER_REGISTRY, normalized) ? OAUTH_PROVIDER_REGISTRY[normalized as keyof typeof OAUTH_PROVIDER_REGISTRY] : undefined
    const config = provider === undefined ? undefined : this.options.providers[provider.key]
    if (provider === undefined || config === undefined) throw new Errors.UNSUPPORTED_PROVIDER(key)
    return { provider, config }
  }

  /** The provider's authorization URL with a fresh state and PKCE challenge, both kept server-side. */
  async authorizationUrl (key: string): Promise<string> {
    const { provider, config } = this.provider(key)
    const state = randomBytes(32).toString('base64url')
    const { verifier, challenge } = pkcePair()
    await this.options.states.put(state, { provider: provider.key, codeVerifier: verifier }, STATE_TTL_MS)
    const url = new URL(config.authUrl)
    const params = {
      client_id: config.clientId,
      redirect_uri: config.redirectUri,
      response_type: 'code',
      scope: config.scopes.join(' '),
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...provider.extraAuthorizationParams
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return url.toString()
  }

  /**
   * Validates the state, exchanges the code, reads the profile, then finds the linked user,
   * links one by verified e-mail, or creates one with role `user`. Nothing is written
   * unless every provider call succeeded.
   */
  async callback (key: string, input: OAuthCallbackQuery): Promise<OAuthSignIn> {
    const { provider, config } = this.provider(key)
    const pending = input.state === undefined || input.state === '' ? null : await this.options.states.take(input.state)
    if (pending === null || pending.provider !== provider.key) throw new Errors.INVALID_OAUTH_STATE()
    if (input.error !== undefined) throw new Errors.OAUTH_PROVIDER_ERROR(`authorization refused (${input.error.slice(0, 100)})`)
    if (input.code === undefined || input.code === '') throw new Errors.OAUTH_PROVIDER_ERROR('no authorization code')
    const timeoutMs = this.options.timeoutMs ?? PROVIDER_TIMEOUT_MS
    const accessToken = await exchangeCode(provider, config, input.code, pending.codeVerifier, timeoutMs)
    const profile = await fetchProfile(provider, config, accessToken, timeoutMs)
    return await this.#resolveUser(provider.key, profile)
  }

  async #resolveUser (provider: string, profile: OAuthProfile): Promise<OAuthSignIn> {
    const { users, identities } = this.options
    const linkedUser = await identities.userOf(provider, profile.subject)
    if (linkedUser !== undefined) return { userId: linkedUser, provider, created: false, linked: false }
    if (profile.email === null) throw new Errors.OAUTH_PROVIDER_ERROR('the profile has no e-mail address')
    if (!isUserEmail(profile.email)) throw new Errors.OAUTH_PROVIDER_ERROR('the profile\'s e-mail address is not one a user may have')
    const existing = await users.findByEmail(profile.email)
    if (existing !== undefined) {
      // Linking on an address either side has not verified would hand the account to whoever
      // typed it in: at the provider, or here before its owner registered (pre-account takeover).
      if (!profile.emailVerified || !existing.email_verified) throw new Errors.EMAIL_ALREADY_REGISTERED()
      await identities.link(provider, profile.subject, existing.id, profile.email)
      return { userId: existing.id, provider, created: false, linked: true }
    }
    const user = await users.create({ email: profile.email, name: displayName(profile, profile.email), passwordHash: null, roles: ['user'], emailVerified: profile.emailVerified })
    await identities.link(provider, profile.subject, user.id, profile.email)
    return { userId: (await identities.userOf(provider, profile.subject)) ?? user.id, provider, created: true, linked: true }
  }
}
