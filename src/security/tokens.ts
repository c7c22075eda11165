import { createHash, randomBytes } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { createSigner, createVerifier, type SignerOptions, TokenError, type VerifierOptions } from 'fast-jwt'
import { AccessClaimsSchema, MfaClaimsSchema, RefreshClaimsSchema, type TokenClaimsSchema } from '../../schemas/tokens.js'

/** Spec 5.2. */
export const ACCESS_TOKEN_TTL_S = 15 * 60
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60

/** CONTRACT section 4: the MFA challenge token lives 5 minutes. */
export const MFA_TOKEN_TTL_S = 5 * 60

export type AccessClaims = Static<typeof AccessClaimsSchema>
export type RefreshClaims = Static<typeof RefreshClaimsSchema>
/** Good only for `/auth/mfa/verify`: its type keeps it away from every other route. */
export type MfaClaims = Static<typeof MfaClaimsSchema>
export type TokenClaims = Static<typeof TokenClaimsSchema>
export type TokenType = TokenClaims['type']

/** Each type's claims, checked by code TypeBox compiles once. */
const CLAIMS_CHECKS = {
  access: TypeCompiler.Compile(AccessClaimsSchema),
  refresh: TypeCompiler.Compile(RefreshClaimsSchema),
  mfa: TypeCompiler.Compile(MfaClaimsSchema)
}

/**
 * HS256 only: the verifier pins the algorithm, so `alg: none` and algorithm-confusion tokens
 * fail, and a token without `exp`, `sub` or `jti` is refused before its claims are read.
 * Signed `iat` and `exp` are the ones written into the payload, from the service's clock.
 */
export const JWT_SIGN_OPTIONS: SignerOptions = { algorithm: 'HS256' }
export const JWT_VERIFY_OPTIONS: VerifierOptions = { algorithms: ['HS256'], requiredClaims: ['exp', 'sub', 'jti'] }

/** Signs and verifies under the options above: @fastify/jwt's `fastify.jwt` in the app. */
export interface Jwt {
  sign: (claims: TokenClaims) => string
  /** The payload of a token whose signature, algorithm and times are good; throws fast-jwt's TokenError. */
  verify: (token: string) => unknown
}

export interface IssuedAccessToken { token: string, jti: string, expiresAt: Date }

/** Spec 2.8: the record kept for an issued refresh token. */
export interface IssuedRefreshToken { token: string, jti: string, expires_at: Date, token_hash: string }

export type TokenFailure = 'expired' | 'invalid' | 'type'

const FAILURE_MESSAGES: Record<TokenFailure, string> = {
  expired: 'Token has expired',
  invalid: 'Invalid token',
  type: 'Invalid token type'
}

/** Spec 5.2's verification failures; the HTTP layer maps them to CONTRACT codes. */
export class TokenVerificationError extends Error {
  constructor (readonly reason: TokenFailure) {
    super(FAILURE_MESSAGES[reason])
    this.name = 'TokenVerificationError'
  }
}

/** Random URL-safe identifier (spec 2.7: 16 bytes for access, 2.8: 32 for refresh). */
export function randomId (bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

/** CONTRACT departure 3: refresh tokens are stored as unsalted SHA-256, so they can be looked up. */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export type TokenServiceOptions = {
  /** Clock for issuance and expiry, in milliseconds; injectable for tests. */
  now?: () => number
} & (
  /** The app's signer and verifier (`fastify.jwt`). */
  { jwt: Jwt } |
  /** Used on its own: signs and verifies with this secret, under the same options. */
  { secret: string }
)

/** Issues the service's JWTs and holds verified ones to their type's claims. */
export class TokenService {
  readonly #jwt: Jwt
  readonly #now: () => number

  constructor (options: TokenServiceOptions) {
    this.#now = options.now ?? Date.now
    this.#jwt = 'jwt' in options
      ? options.jwt
      : { sign: createSigner({ ...JWT_SIGN_OPTIONS, key: options.secret }), verify: createVerifier({ ...JWT_VERIFY_OPTIONS, key: options.secret }) }
  }

  /**
   * Spec 2.7: caller-supplied data claims plus the reserved ones, which data cannot override.
   * `issuedAtMs`: the instant the caller records the token under (a session's), when not now.
   */
  issueAccessToken (data: { sub: string, roles: string[] } & Record<string, unknown>, ttlSeconds = ACCESS_TOKEN_TTL_S, issuedAtMs = this.#now()): IssuedAccessToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(16)
    const token = this.#jwt.sign({ ...data, type: 'access', jti, iat, exp: iat + ttlSeconds })
    return { token, jti, expiresAt: new Date((iat + ttlSeconds) * 1000) }
  }

  /** Spec 2.8. */
  issueRefreshToken (sub: string, device: Record<string, unknown> = {}, issuedAtMs = this.#now()): IssuedRefreshToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(32)
    const exp = iat + REFRESH_TOKEN_TTL_S
    const token = this.#jwt.sign({ sub, jti, iat, exp, type: 'refresh', device })
    return { token, jti, expires_at: new Date(exp * 1000), token_hash: hashToken(token) }
  }

  /** CONTRACT section 4: the challenge answered by `/auth/mfa/verify`, single use. */
  issueMfaToken (sub: string, device: Record<string, unknown> = {}): IssuedAccessToken {
    const iat = Math.floor(this.#now() / 1000)
    const jti = randomId(16)
    const token = this.#jwt.sign({ sub, jti, iat, exp: iat + MFA_TOKEN_TTL_S, type: 'mfa', device })
    return { token, jti, expiresAt: new Date((iat + MFA_TOKEN_TTL_S) * 1000) }
  }

  verify (token: string, expectedType: 'access'): AccessClaims
  verify (token: string, expectedType: 'refresh'): RefreshClaims
  verify (token: string, expectedType: 'mfa'): MfaClaims
  verify (token: string, expectedType: TokenType = 'access'): TokenClaims {
    let payload
    try {
      payload = this.#jwt.verify(token)
    } catch (error) {
      const expired = error instanceof TokenError && error.code === TokenError.codes.expired
      throw new TokenVerificationError(expired ? 'expired' : 'invalid')
    }
    return this.accept(payload, expectedType)
  }

  accept (payload: unknown, expectedType: 'access'): AccessClaims
  accept (payload: unknown, expectedType: TokenType): TokenClaims
  /** The payload of a verified token as claims of `expectedType`, or the failure that refuses it. */
  accept (payload: unknown, expectedType: TokenType): TokenClaims {
    if ((payload as { type?: unknown } | null)?.type !== expectedType) throw new TokenVerificationError('type')
    const check = CLAIMS_CHECKS[expectedType]
    if (!check.Check(payload)) throw new TokenVerificationError('invalid')
    if (payload.exp * 1000 <= this.#now()) throw new TokenVerificationError('expired')
    return payload
  }
}
