import type { TokenPair } from '../../../schemas/auth.js'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import type { SecretBox } from '../../security/secret-box.js'
import { ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S, type TokenService } from '../../security/tokens.js'
import type { Rotation } from '../../store/session-rotation.js'
import type { PresentedRefreshToken, SignInProof } from '../../store/sessions.js'

/** The organization a session's access tokens speak for, with the holder's role in it. */
export interface ActiveOrganization { id: string, role: OrganizationRole }

/**
 * A session's token pairs (docs/api.md, "Sessions"): signed, and, for refresh retries, sealed
 * into a rotation and opened from it.
 */
export class TokenPairs {
  constructor (private readonly deps: {
    tokens: TokenService
    /** Seals the pairs kept for refresh retries. */
    retryBox: SecretBox
    /** How long a rotated pair is kept for retries of its spent token (0: not kept). */
    retryWindowS: number
  }) {}

  of (accessToken: string, refreshToken: string): TokenPair {
    return {
      access_token: accessToken,
      refresh_token: refreshToken,
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_TTL_S,
      refresh_expires_in: REFRESH_TOKEN_TTL_S
    }
  }

  /**
   * Signs a pair as of `issuedAtMs`, which must be the instant it is recorded under: an ended
   * session's access tokens are revoked until that instant + 15 minutes, which must not come
   * before they expire.
   */
  sign (
    user: { id: string, roles: string[] },
    device: Record<string, unknown>,
    { authTime, amr }: SignInProof,
    issuedAtMs: number,
    organization: ActiveOrganization | null = null
  ) {
    const { tokens } = this.deps
    const signIn = { auth_time: Math.floor(Date.parse(authTime) / 1000), amr }
    const membership = organization === null ? {} : { org_id: organization.id, org_roles: [organization.role] }
    return {
      access: tokens.issueAccessToken(
        { sub: user.id, roles: [...user.roles], ...signIn, ...membership }, ACCESS_TOKEN_TTL_S, issuedAtMs
      ),
      refresh: tokens.issueRefreshToken(user.id, device, issuedAtMs)
    }
  }

  /** A rotation's new pair, signed as of `now`, and what storing it records (SessionsRepository.rotate). */
  rotation (
    user: { id: string, roles: string[] },
    presented: PresentedRefreshToken,
    device: Record<string, unknown>,
    organization: ActiveOrganization | null,
    now: string
  ): { pair: TokenPair, rotation: Omit<Rotation, 'entries'> } {
    const { retryBox, retryWindowS } = this.deps
    const nowMs = Date.parse(now)
    // A refresh keeps the sign-in's auth_time and amr: it proves nothing new of the user.
    const { access, refresh } = this.sign(user, device, presented.sessionAuthentication, nowMs, organization)
    const pair = this.of(access.token, refresh.token)
    const retry = retryWindowS === 0
      ? null
      : {
          pair: retryBox.seal(JSON.stringify({ access_token: pair.access_token, refresh_token: pair.refresh_token })),
          until: new Date(nowMs + retryWindowS * 1000).toISOString()
        }
    return {
      pair,
      rotation: {
        spentJti: presented.jti,
        sessionId: presented.sessionId,
        userId: user.id,
        issued: refresh,
        accessJti: access.jti,
        device,
        now,
        retry,
        organizationId: organization?.id ?? null
      }
    }
  }

  /** The pair the token was rotated into, while kept for retries of it; null otherwise. */
  kept (token: PresentedRefreshToken, now: string): TokenPair | null {
    const kept = token.sessionRetry
    if (this.deps.retryWindowS === 0 || kept === null || kept.jti !== token.jti ||
      Date.parse(kept.until) <= Date.parse(now)) return null
    const opened = this.deps.retryBox.open(kept.pair)
    if (opened === null) return null // sealed under another secret
    const { access_token: accessToken, refresh_token: refreshToken } = JSON.parse(opened) as Pick<TokenPair, 'access_token' | 'refresh_token'>
    return this.of(accessToken, refreshToken)
  }
}
