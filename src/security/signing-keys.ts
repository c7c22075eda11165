import { createHash, createPrivateKey, createPublicKey, createSecretKey, generateKeyPair as generateKeyPairCallback, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { promisify } from 'node:util'
import type { Static } from '@sinclair/typebox'
import { ID_TOKEN_ALGORITHMS, type PublicJwkSchema } from '../../schemas/keys.js'

/** The token signing algorithms (docs/api.md, "Signing keys"). */
export const JWT_ALGORITHMS = ['HS256', 'EdDSA', 'ES256', 'RS256'] as const
export type JwtAlgorithm = typeof JWT_ALGORITHMS[number]
export type AsymmetricAlgorithm = Exclude<JwtAlgorithm, 'HS256'>

const generateKeyPairAsync = promisify(generateKeyPairCallback)

/** RSA keys shorter than this are refused: a shorter modulus gives less than 112 bits of security. */
const RSA_MIN_BITS = 2048

/** A public key as the JWKS publishes it. */
export type PublicJwk = Static<typeof PublicJwkSchema>

/** A key tokens are verified with: an HS256 secret, or a public key. */
export interface VerificationKey {
  kid: string
  algorithm: JwtAlgorithm
  /** What fast-jwt verifies with: the secret, or the public key as PEM. */
  key: string
  /** null for an HS256 secret, which is never published. */
  jwk: PublicJwk | null
}

/** The key tokens are signed with, and every key they are still verified with. */
export interface SigningKeys {
  /** What fast-jwt signs with: the secret, or the private key as PEM. */
  signingKey: string
  /** The signing key's verification half. */
  current: VerificationKey
  /** Former keys, still accepted (JWT_PREVIOUS_KEYS). */
  previous: VerificationKey[]
  /** The `iss` claim of every token, or null for none. */
  issuer: string | null
}

/** A bad key; the configuration names the variable it came from. */
export class KeyError extends Error {}

/**
 * The key's JWK thumbprint: SHA-256 of its required members, in lexicographic order, as compact JSON. A
 * stable id that reveals nothing the key does not (an HS256 secret's is a hash of it, no
 * easier to reverse than the token signatures themselves).
 */
function thumbprint (jwk: Record<string, unknown>): string {
  const members: Record<string, string[]> = { EC: ['crv', 'kty', 'x', 'y'], OKP: ['crv', 'kty', 'x'], RSA: ['e', 'kty', 'n'], oct: ['k', 'kty'] }
  const required = members[String(jwk.kty)] ?? []
  const canonical = JSON.stringify(Object.fromEntries(required.map((name) => [name, jwk[name]])))
  return createHash('sha256').update(canonical).digest('base64url')
}

/** The algorithm a key is for, or a sentence saying why it cannot sign tokens. */
function algorithmOf (key: KeyObject): AsymmetricAlgorithm {
  const type = key.asymmetricKeyType
  const details = key.asymmetricKeyDetails ?? {}
  if (type === 'ed25519') return 'EdDSA'
  if (type === 'ec') {
    if (details.namedCurve !== 'prime256v1') throw new KeyError(`is an EC key on ${details.namedCurve ?? 'an unknown curve'}; ES256 needs P-256`)
    return 'ES256'
  }
  if (type === 'rsa') {
    const bits = details.modulusLength ?? 0
    if (bits < RSA_MIN_BITS) throw new KeyError(`is a ${bits}-bit RSA key; at least ${RSA_MIN_BITS} bits are required`)
    return 'RS256'
  }
  throw new KeyError(`is a ${type ?? 'unknown'} key; only Ed25519, P-256 and RSA keys are supported`)
}

function publicKeyOf (key: KeyObject): VerificationKey {
  const algorithm = algorithmOf(key)
  const { kty, crv, x, y, n, e } = key.export({ format: 'jwk' })
  const kid = thumbprint({ kty, crv, x, y, n, e })
  const jwk = Object.fromEntries(Object.entries({ kty, kid, alg: algorithm, use: 'sig', crv, x, y, n, e })
    .filter(([, value]) => value !== undefined)) as unknown as PublicJwk
  return { kid, algorithm, key: key.export({ type: 'spki', format: 'pem' }).toString(), jwk }
}

/** An HS256 secret as a verification key. */
export function secretKey (secret: string): VerificationKey {
  const kid = thumbprint(createSecretKey(Buffer.from(secret)).export({ format: 'jwk' }))
  return { kid, algorithm: 'HS256', key: secret, jwk: null }
}

/** Environments often write PEM with `\n` escapes on one line. */
function unescaped (pem: string): string {
  return pem.replace(/\\n/g, '\n')
}

/**
 * A private key for `algorithm`, from PEM; throws KeyError saying what is wrong with it. The
 * first private key block is read, so the output of keys:generate (the private key, then the
 * public one) serves as it is (docs/operations.md, "Signing keys").
 */
export function privateKey (
  pem: string,
  algorithm: AsymmetricAlgorithm
): { signingKey: string, verification: VerificationKey } {
  const text = unescaped(pem)
  const block = /-----BEGIN ((RSA |EC |ENCRYPTED )?PRIVATE KEY)-----[\s\S]*?-----END \1-----/.exec(text)?.[0]
  if (block === undefined && /-----BEGIN (RSA )?PUBLIC KEY-----/.test(text)) throw new KeyError('is a public key; the private key is needed to sign')
  let key: KeyObject
  try {
    key = createPrivateKey(block ?? text)
  } catch {
    throw new KeyError('is not a PEM private key')
  }
  const verification = publicKeyOf(createPublicKey(key))
  if (verification.algorithm !== algorithm) throw new KeyError(`is a key for ${verification.algorithm}, not for JWT_ALGORITHM ${algorithm}`)
  return { signingKey: key.export({ type: 'pkcs8', format: 'pem' }).toString(), verification }
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g

/**
 * Former keys still accepted: PEM public keys, and HS256 secrets separated by commas or
 * white space; throws KeyError naming the bad entry by its position.
 */
export function previousKeys (text: string): VerificationKey[] {
  const source = unescaped(text)
  const keys: VerificationKey[] = []
  let position = 0
  for (const [block, label] of source.matchAll(PEM_BLOCK)) {
    position++
    if (label !== 'PUBLIC KEY' && label !== 'RSA PUBLIC KEY') throw new KeyError(`entry ${position} is a ${label}; only public keys (or former HS256 secrets) belong here`)
    let key: KeyObject
    try {
      key = createPublicKey(block)
    } catch {
      throw new KeyError(`entry ${position} is not a readable PEM public key`)
    }
    try {
      keys.push(publicKeyOf(key))
    } catch (error) {
      throw new KeyError(`entry ${position} ${(error as Error).message}`)
    }
  }
  for (const secret of source.replace(PEM_BLOCK, ' ').split(/[\s,]+/).filter((item) => item.length > 0)) {
    position++
    if (secret.startsWith('-----')) throw new KeyError(`entry ${position} is an incomplete PEM block`)
    if (secret.length < 32) throw new KeyError(`entry ${position} is a secret shorter than 32 characters`)
    keys.push(secretKey(secret))
  }
  return keys
}

/**
 * The signing secret, as key material: JWT_SECRET under HS256, the private key's PKCS#8 DER
 * otherwise. Webhook secrets and the pairs kept for refresh retries were sealed under a key
 * derived from it before sealing had a key of its own, so the sealing key ring still opens with
 * it (docs/operations.md, "Sealed secrets").
 */
export function signingSecret (keys: Pick<SigningKeys, 'signingKey' | 'current'>): string | Buffer {
  if (keys.current.algorithm === 'HS256') return keys.signingKey
  return createPrivateKey(keys.signingKey).export({ type: 'pkcs8', format: 'der' })
}

/** A new key pair for `algorithm`, as PEM (PKCS#8 and SPKI). */
export function generateKeyPair (algorithm: AsymmetricAlgorithm): { privateKey: string, publicKey: string } {
  const pair = algorithm === 'EdDSA'
    ? generateKeyPairSync('ed25519')
    : algorithm === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: 3072 })
  return {
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()
  }
}

/** The algorithms of the keys tokens are verified with, the current key's first, each once. */
export function acceptedAlgorithms (keys: SigningKeys): JwtAlgorithm[] {
  return [...new Set([keys.current, ...keys.previous].map(({ algorithm }) => algorithm))]
}

/** The keys of the JWKS: public keys in use and still accepted, each once. */
export function publicJwks (keys: SigningKeys): PublicJwk[] {
  const seen = new Set<string>()
  return [keys.current, ...keys.previous].flatMap(({ jwk }) => {
    if (jwk === null || seen.has(jwk.kid)) return []
    seen.add(jwk.kid)
    return [jwk]
  })
}

export { ID_TOKEN_ALGORITHMS }
export type IdTokenAlgorithm = typeof ID_TOKEN_ALGORITHMS[number]

/** RSA keys for ID tokens: the size most providers sign them with, and quick to generate. */
const ID_TOKEN_RSA_BITS = 2048

/** A key ID tokens are signed with: private, as a JWK, its public half, and its PEM (as stored). */
export interface IdTokenKey {
  privateJwk: Record<string, unknown> & { kid: string, alg: IdTokenAlgorithm, use: 'sig' }
  publicJwk: PublicJwk
  pem: string
}

/** An ID-token key from its PKCS#8 PEM. */
export function idTokenKey (pem: string): IdTokenKey {
  const key = createPrivateKey(pem)
  const verification = publicKeyOf(createPublicKey(key))
  return {
    privateJwk: { ...key.export({ format: 'jwk' }), kid: verification.kid, alg: verification.algorithm as IdTokenAlgorithm, use: 'sig' },
    publicJwk: verification.jwk as PublicJwk,
    pem
  }
}

/** A new ID-token key for `algorithm`, generated off the event loop. */
export async function generateIdTokenKey (algorithm: IdTokenAlgorithm): Promise<IdTokenKey> {
  const encoding = { privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } } as const
  const pair = algorithm === 'EdDSA'
    ? generateKeyPairAsync('ed25519', encoding)
    : algorithm === 'ES256'
      ? generateKeyPairAsync('ec', { namedCurve: 'P-256', ...encoding })
      : generateKeyPairAsync('rsa', { modulusLength: ID_TOKEN_RSA_BITS, ...encoding })
  const { privateKey } = await pair as unknown as { privateKey: string }
  return idTokenKey(privateKey)
}
