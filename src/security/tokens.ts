import { createHash, randomBytes } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { createSigner, createVerifier, type SignerOptions, TokenError, type VerifierOptions } from 'fast-jwt'
import { AccessClaimsSchema, MfaClaimsSchema, RefreshClaimsSchema, type TokenClaimsSchema } from '../../schemas/tokens.js'
import { type SigningKeys, secretKey, type VerificationKey } from './signing-keys.js'

/** Token lifetimes (docs/api.md, "Tokens"). */
export const ACCESS_TOKEN_TTL_S = 15 * 60
export const REFRESH_TOKEN_TTL_S = 7 * 24 * 60 * 60

/** The MFA challenge token lives 5 minutes (docs/api.md, "MFA at sign-in"). */
export const MFA_TOKEN_TTL_S = 5 * 60

export type AccessClaims = Static<typeof AccessClaimsSchema>
export type RefreshClaims = Static<typeof RefreshClaimsSchema>
/** Good only for `/auth/mfa/verify`: its type keeps it away from every other route. */
export type MfaClaims = Static<typeof MfaClaimsSchema>
export type TokenClaims = Static<typeof TokenClaimsSchema>
export type TokenType = TokenClaims['type']

/** Verified tokens remembered at most (oldest dropped first). */
const VERIFIED_CACHE_SIZE = 10_000

/** Each type's claims, checked by code TypeBox compiles once. */
const CLAIMS_CHECKS = {
  access: TypeCompiler.Compile(AccessClaimsSchema),
  refresh: TypeCompiler.Compile(RefreshClaimsSchema),
  mfa: TypeCompiler.Compile(MfaClaimsSchema)
}

/** Signs with the current key: its algorithm, its `kid` in the header, JWT_ISSUER as `iss`. */
export function jwtSignOptions (keys: SigningKeys): SignerOptions {
  return { algorithm: keys.current.algorithm, kid: keys.current.kid, ...(keys.issuer !== null && { iss: keys.issuer }) }
}

/**
 * Verifies under one key, pinned to that key's algorithm, so `alg: none` and algorithm
 * confusion (HS256 signed with a public key) fail; a token without `exp`, `sub` or `jti`
 * (or `iss`, when JWT_ISSUER is set) is refused before its claims are read. Signed `iat` and
 * `exp` are the ones written into the payload, from the service's clock.
 */
export function jwtVerifyOptions (key: VerificationKey, issuer: string | null): VerifierOptions {
  return {
    algorithms: [key.algorithm],
    requiredClaims: issuer === null ? ['exp', 'sub', 'jti'] : ['exp', 'sub', 'jti', 'iss'],
    ...(issuer !== null && { allowedIss: issuer })
  }
}

/** The signing keys of an HS256 secret alone, for the service used without the app. */
function secretSigningKeys (secret: string): SigningKeys {
  return { signingKey: secret, current: secretKey(secret), previous: [], issuer: null }
}

/** The `kid` of a token's header: undefined when absent, null when the header cannot be read. */
function kidOf (token: string): string | undefined | null {
  const end = token.indexOf('.')
  if (end <= 0) return null
  try {
    const header: unknown = JSON.parse(Buffer.from(token.slice(0, end), 'base64url').toString())
    if (typeof header !== 'object' || header === null || Array.isArray(header)) return null
    const { kid } = header as { kid?: unknown }
    return kid === undefined ? undefined : typeof kid === 'string' ? kid : null
  } catch {
    return null
  }
}

/** Verifies a token under one key: its payload, or fast-jwt's TokenError. */
export type KeyVerifier = (token: string) => unknown

/** fast-jwt's verifier under one key, for the service used without the app. */
function keyVerifier (key: VerificationKey, issuer: string | null): KeyVerifier {
  return createVerifier({ ...jwtVerifyOptions(key, issuer), key: key.key })
}

/**
 * Verifies with the key the token's `kid` names, among the current and previous keys, each
 * through its own verifier (`verifierOf`); an unknown `kid` is refused, and `jku`, `x5u` or
 * `jwk` headers are never followed. A token without `kid` predates key ids: only an HS256
 * current key may verify it.
 */
export function keyedVerifier (
  keys: SigningKeys,
  verifierOf: (key: VerificationKey) => KeyVerifier = (key) => keyVerifier(key, keys.issuer)
): KeyVerifier {
  const verifiers = new Map<string, KeyVerifier>()
  for (const key of [keys.current, ...keys.previous]) {
    if (!verifiers.has(key.kid)) verifiers.set(key.kid, verifierOf(key))
  }
  const withoutKid = keys.current.algorithm === 'HS256' ? verifiers.get(keys.current.kid) : undefined
  return (token) => {
    const kid = kidOf(token)
    const verifier = kid === undefined ? withoutKid : kid === null ? undefined : verifiers.get(kid)
    if (verifier === undefined) throw new TokenError(TokenError.codes.invalidKey, 'No accepted key for this token')
    return verifier(token)
  }
}

/** Signs and verifies under the options above: through @fastify/jwt in the app, fast-jwt alone without it. */
export interface Jwt {
  sign: (claims: TokenClaims) => string
  /** The payload of a token whose signature, algorithm and times are good; throws fast-jwt's TokenError. */
  verify: KeyVerifier
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

/**
 * Refresh tokens are stored as unsalted SHA-256, so they can
 * be looked up (docs/api.md, "Deliberate departures", item 3).
 */
export function hashToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export type TokenServiceOptions = {
  /** Clock for issuance and expiry, in milliseconds; injectable for tests. */
  now?: () => number
} & (
  /** The app's signer and verifier. */
  { jwt: Jwt } |
  /** Used on its own: signs and verifies with HS256 under this secret, under the same options. */
  { secret: string }
)

/** Issues the service's JWTs, and verifies them and holds them to their type's claims. */
export class TokenService {
  readonly #jwt: Jwt
  /**
   * Tokens already verified, by their exact text, until they expire: a client repeats its
   * token on every request, and verifying it each time (through @fastify/jwt, request.jwtVerify
   * or fastify.jwt.verify alike) took the authenticated user read from about 42 to 73 µs of
   * CPU, 0.55-0.57 of its throughput (`npm run bench:ab`). fast-jwt's own cache keys by a
   * SHA-256 of the text: a hash per request. Revocation is checked apart, on every request.
   */
  readonly #verified = new Map<string, TokenClaims>()
  readonly #now: () => number

  constructor (options: TokenServiceOptions) {
    this.#now = options.now ?? Date.now
    if ('jwt' in options) {
      this.#jwt = options.jwt
    } else {
      const keys = secretSigningKeys(options.secret)
      this.#jwt = { sign: createSigner({ ...jwtSignOptions(keys), key: keys.signingKey }), verify: keyedVerifier(keys) }
    }
  }

  /**
   * Caller-supplied data claims plus the reserved ones (docs/api.md, "Tokens"), which data
   * cannot override.
   * `issuedAtMs`: the instant the caller records the token under (a session's), when not now.
   */
  issueAccessToken (
    data: { sub: string, roles: string[] } & Record<string, unknown>,
    ttlSeconds = ACCESS_TOKEN_TTL_S,
    issuedAtMs = this.#now()
  ): IssuedAccessToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(16)
    const token = this.#jwt.sign({ ...data, type: 'access', jti, iat, exp: iat + ttlSeconds })
    return { token, jti, expiresAt: new Date((iat + ttlSeconds) * 1000) }
  }

  /** A refresh token and the record kept for it (docs/api.md, "Tokens"). */
  issueRefreshToken (sub: string, device: Record<string, unknown> = {}, issuedAtMs = this.#now()): IssuedRefreshToken {
    const iat = Math.floor(issuedAtMs / 1000)
    const jti = randomId(32)
    const exp = iat + REFRESH_TOKEN_TTL_S
    const token = this.#jwt.sign({ sub, jti, iat, exp, type: 'refresh', device })
    return { token, jti, expires_at: new Date(exp * 1000), token_hash: hashToken(token) }
  }

  /** The challenge answered by `/auth/mfa/verify`, single use (docs/api.md, "MFA at sign-in"). */
  issueMfaToken (sub: string, device: Record<string, unknown> = {}, proof: Pick<MfaClaims, 'amr' | 'cv'> = {}): IssuedAccessToken {
    const iat = Math.floor(this.#now() / 1000)
    const jti = randomId(16)
    const token = this.#jwt.sign({ ...proof, sub, jti, iat, exp: iat + MFA_TOKEN_TTL_S, type: 'mfa', device })
    return { token, jti, expiresAt: new Date((iat + MFA_TOKEN_TTL_S) * 1000) }
  }

  verify (token: string, expectedType: 'access'): AccessClaims
  verify (token: string, expectedType: 'refresh'): RefreshClaims
  verify (token: string, expectedType: 'mfa'): MfaClaims
  verify (token: string, expectedType: TokenType = 'access'): TokenClaims {
    const claims = this.#verified.get(token) ?? this.#verifyAfresh(token)
    if (claims.exp * 1000 <= this.#now()) {
      this.#verified.delete(token)
      throw new TokenVerificationError('expired')
    }
    if (claims.type !== expectedType) throw new TokenVerificationError('type')
    return claims
  }

  /** The token's claims, once its signature, algorithm and times are good and its claims are its type's. */
  #verifyAfresh (token: string): TokenClaims {
    let payload
    try {
      payload = this.#jwt.verify(token)
    } catch (error) {
      const expired = error instanceof TokenError && error.code === TokenError.codes.expired
      throw new TokenVerificationError(expired ? 'expired' : 'invalid')
    }
    const type = (payload as { type?: unknown } | null)?.type
    if (typeof type !== 'string' || !Object.hasOwn(CLAIMS_CHECKS, type)) throw new TokenVerificationError('type')
    if (!CLAIMS_CHECKS[type as TokenType].Check(payload)) throw new TokenVerificationError('invalid')
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value ?? '')
    this.#verified.set(token, payload)
    return payload
  }
}

/**
 * One-time tokens of one kind (a verification or a reset link) an account is sent at most per
 * hour: nobody can flood an inbox through us.
 */
export const ONE_TIME_TOKENS_PER_HOUR = 3

/** A one-time token: 32 random bytes, URL-safe; only its SHA-256 is stored, so the table holds nothing to replay. */
export function newOneTimeToken (): { token: string, hash: string } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: hashToken(token) }
}
