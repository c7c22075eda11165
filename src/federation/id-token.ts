import { errors, jwtVerify, type JWTVerifyGetKey } from 'jose'
import { providerError } from './client.js'
import { oidcProfile, type OAuthProfile } from './providers.js'

/** Asymmetric algorithms only: an HMAC over the client secret, or `none`, proves nothing about the provider. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519']
/** Clock difference allowed between the provider and the service. */
const CLOCK_TOLERANCE_S = 60
/** An ID token is issued in the code exchange that just happened: an older one is a replay. */
const MAX_ID_TOKEN_AGE_S = 10 * 60

export interface IdTokenExpectations {
  issuer: string
  clientId: string
  nonce: string
}

/**
 * An ID token validated as OpenID Connect asks of a client (docs/security.md,
 * "Provider sign-in"): a signature by one of the issuer's keys, `iss`, `aud` holding the
 * client, `azp` naming it when present, `exp`, `iat`, a `sub`, and the `nonce` sent with this
 * flow's authorization request. Answers its claims.
 */
export async function idTokenClaims (
  token: string,
  keys: JWTVerifyGetKey,
  expected: IdTokenExpectations
): Promise<Record<string, unknown> & { sub: string }> {
  let claims: Record<string, unknown>
  try {
    ({ payload: claims } = await jwtVerify(token, keys, {
      issuer: expected.issuer,
      audience: expected.clientId,
      algorithms: ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_S,
      maxTokenAge: MAX_ID_TOKEN_AGE_S,
      requiredClaims: ['sub', 'exp', 'iat']
    }))
  } catch (error) {
    if (error instanceof errors.JWTClaimValidationFailed) throw providerError(`the ID token's ${error.claim} claim is not valid`)
    if (error instanceof errors.JWTExpired) throw providerError('the ID token has expired')
    if (error instanceof errors.JOSEError) throw providerError(`the ID token was refused (${error.code})`)
    // The keys are fetched on demand: an unreachable JWKS URL fails here.
    throw providerError('the provider\'s signing keys could not be read')
  }
  // Several audiences: the one meant to use the token names itself in azp (docs/api.md, "Providers by issuer").
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  if ((audiences.length > 1 || claims.azp !== undefined) && claims.azp !== expected.clientId) throw providerError('the ID token\'s azp claim is not valid')
  if (claims.nonce !== expected.nonce) throw providerError('the ID token\'s nonce claim is not valid')
  const subject = claims.sub
  if (typeof subject !== 'string' || subject === '') throw providerError('the ID token\'s sub claim is not valid')
  return { ...claims, sub: subject }
}

/** A validated ID token's profile (idTokenClaims). */
export async function validateIdToken (
  token: string,
  keys: JWTVerifyGetKey,
  expected: IdTokenExpectations
): Promise<OAuthProfile> {
  const claims = await idTokenClaims(token, keys, expected)
  return oidcProfile(claims, claims.sub)
}
