import { createHash, randomBytes } from 'node:crypto'
import { createSigner, createVerifier, TokenError } from 'fast-jwt'

/** Token lifetimes (docs/api.md, "Tokens"). */
export const ACCESS_TOKEN_TTL_S = 15 * 60
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60

/** The MFA challenge token lives 5 minutes (docs/api.md, "MFA at sign-in"). */
export const MFA_TOKEN_TTL_S = 5 * 60

/** Verified tokens remembered at most (oldest dropped first). */
const VERIFIED_CACHE_SIZE = 10_000

export type TokenType = 'access' | 'refresh' | 'mfa'

export interface AccessClaims {
  sub: string
  roles: string[]
  type: 'access'
  jti: string
  iat: number
  exp: number
  [claim: string]: unknown
}

export interface RefreshClaims {
  sub: string
  jti: string
  iat: number
  exp: number
  type: 'refresh'
  device: Record<string, unknown>
}

/** Good only for `/auth/mfa/verify`: its type keeps it away from every other route. */
export interface MfaClaims {
  sub: string
  jti: string
  iat: number
  exp: number
  type: 'mfa'
  /** The device given at sign-in, carried to the session the challenge opens. */
  device: Record<string, unknown>
}

export interface IssuedAccessToken { token: string, jti: string, expiresAt: Date }

/** The record kept for an issued refresh token (docs/api.md, "Sessions"). */
export interface IssuedRefreshToken { token: string, jti: string, expires_at: Date, token_hash: string }

export type TokenFailure = 'expired' | 'invalid' | 'type'

const FAILURE_MESSAGES: Record<TokenFailure, string> = {
  expired: 'Token has expired',
  invalid: 'Invalid token',
  type: 'Invalid token type'
}

/** Token verification failures; the HTTP layer maps them to error codes (docs/api.md, "Bearer authentication"). */
export class TokenVerificationError extends Error {
  constructor (readonly reason: TokenFailure) {
    super(FAILURE_MESSAGES[reason])
    this.name = 'TokenVerificationError'
  }
}

/** Random URL-safe identifier (16 bytes for an access token's `jti`, 32 for a refresh token's). */
export function randomId (bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

/** Refresh tokens are stored as unsalted SHA-256, so they can be looked up (docs/api.md, "Deliberate departures", item 3). */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export interface TokenServiceOptions {
  secret: string
  /** Clock for issuance, in milliseconds; injectable for tests. */
  now?: () => number
}

/**
 * Issues and verifies the service's JWTs. HS256 only: the verifier pins the algorithm, so
 * `alg: none` and algorithm-confusion tokens fail, and `exp`, `sub` and `jti` are required.
 */
export class TokenService {
  readonly #sign: (payload: Record<string, unknown>) => string
  readonly #verify: (token: string) => Record<string, unknown>
  /**
   * Tokens already verified, by their exact text, until they expire: a client repeats its
   * token on every request. (fast-jwt's own cache keys by a SHA-256 of the text: a hash per
   * request.) Revocation is checked apart, on every request.
   */
  readonly #verified = new Map<string, Record<string, unknown>>()
  readonly #now: () => number

  constructor (options: TokenServiceOptions) {
    this.#now = options.now ?? Date.now
    // iat and exp are written into the payload from our clock; the signer keeps them.
    this.#sign = createSigner({ key: options.secret, algorithm: 'HS256' })
    this.#verify = createVerifier({ key: options.secret, algorithms: ['HS256'], requiredClaims: ['exp', 'sub', 'jti'] })
  }

  /**
   * Caller-supplied data claims plus the reserved ones (docs/api.md, "Tokens"), which data
   * cannot override.
   * `issuedAtMs`: the instant the caller records the token under (a session's), when not now.
   */
  issueAccessToken (data: { sub: string, roles: string[] } & Record<string, unknown>, ttlSeconds = ACCESS_TOKEN_TTL_S, issuedAtMs = this.#now()): IssuedAccessToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(16)
    const token = this.#sign({ ...data, type: 'access', jti, iat, exp: iat + ttlSeconds })
    return { token, jti, expiresAt: new Date((iat + ttlSeconds) * 1000) }
  }

  /** A refresh token and the record kept for it (docs/api.md, "Tokens"). */
  issueRefreshToken (sub: string, device: Record<string, unknown> = {}, issuedAtMs = this.#now()): IssuedRefreshToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(32)
    const exp = iat + REFRESH_TOKEN_TTL_S
    const token = this.#sign({ sub, jti, iat, exp, type: 'refresh', device })
    return { token, jti, expires_at: new Date(exp * 1000), token_hash: hashToken(token) }
  }

  /** The challenge answered by `/auth/mfa/verify`, single use (docs/api.md, "MFA at sign-in"). */
  issueMfaToken (sub: string, device: Record<string, unknown> = {}): IssuedAccessToken {
    const iat = Math.floor(this.#now() / 1000)
    const jti = randomId(16)
    const token = this.#sign({ sub, jti, iat, exp: iat + MFA_TOKEN_TTL_S, type: 'mfa', device })
    return { token, jti, expiresAt: new Date((iat + MFA_TOKEN_TTL_S) * 1000) }
  }

  verify (token: string, expectedType: 'access'): AccessClaims
  verify (token: string, expectedType: 'refresh'): RefreshClaims
  verify (token: string, expectedType: 'mfa'): MfaClaims
  verify (token: string, expectedType: TokenType = 'access'): AccessClaims | RefreshClaims | MfaClaims {
    const claims = this.#verifiedClaims(token)
    if (claims.type !== expectedType) throw new TokenVerificationError('type')
    if (typeof claims.sub !== 'string' || typeof claims.jti !== 'string') throw new TokenVerificationError('invalid')
    return claims as unknown as AccessClaims | RefreshClaims | MfaClaims
  }

  #verifiedClaims (token: string): Record<string, unknown> {
    const cached = this.#verified.get(token)
    if (cached !== undefined) {
      if ((cached.exp as number) * 1000 > this.#now()) return cached
      this.#verified.delete(token)
      throw new TokenVerificationError('expired')
    }
    let claims: Record<string, unknown>
    try {
      claims = this.#verify(token)
    } catch (error) {
      const expired = error instanceof TokenError && error.code === TokenError.codes.expired
      throw new TokenVerificationError(expired ? 'expired' : 'invalid')
    }
    // Beyond a Date's range (year 275760) a token would never expire, nor could its revocation be kept.
    if (Number.isNaN(new Date(Number(claims.exp) * 1000).getTime())) throw new TokenVerificationError('invalid')
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value ?? '')
    this.#verified.set(token, claims)
    return claims
  }
}
