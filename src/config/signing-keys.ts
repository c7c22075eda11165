import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import {
  type AsymmetricAlgorithm,
  generateKeyPair,
  JWT_ALGORITHMS,
  type JwtAlgorithm,
  KeyError,
  previousKeys,
  privateKey,
  secretKey,
  signingSecret,
  type SigningKeys,
  type VerificationKey
} from '../security/signing-keys.js'
import type { KeyMaterial } from '../security/secret-box.js'
import { isUri } from './addresses.js'
import { type Env, EnvSchema } from './environment.js'
import { ConfigError, shown } from './problems.js'

/**
 * The token signing secret and keys (docs/operations.md, "Signing keys"): read from the JWT_*
 * variables, or generated, for one process or for every worker of a cluster, with a warning.
 */

/** JWT_PRIVATE_KEY, or the file JWT_PRIVATE_KEY_FILE names; undefined when neither is set. */
function readPrivateKeyText (env: Env, problems: string[]): string | undefined {
  if (env.JWT_PRIVATE_KEY !== undefined && env.JWT_PRIVATE_KEY_FILE !== undefined) {
    problems.push('JWT_PRIVATE_KEY and JWT_PRIVATE_KEY_FILE must not both be set')
    return undefined
  }
  if (env.JWT_PRIVATE_KEY_FILE === undefined) return env.JWT_PRIVATE_KEY
  try {
    return readFileSync(env.JWT_PRIVATE_KEY_FILE, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable'
    problems.push(`JWT_PRIVATE_KEY_FILE must name a readable file (${code}: "${env.JWT_PRIVATE_KEY_FILE}")`)
    return undefined
  }
}

/**
 * Who holds a secret or key pair generated at start-up: this process alone, or every worker of
 * `npm run start:cluster`, which its primary generated them for (sharedSigningVariables).
 */
type GeneratedFor = 'process' | 'workers'

/**
 * What a signing secret drawn at start-up also breaks between instances: each signs with its
 * own, so none accepts another's tokens, nor, with retries on, opens the pairs another kept
 * for refresh retries (docs/api.md, "Sessions"). A cluster's workers share theirs.
 */
function acrossInstances (refreshRetryWindowS: string, holder: GeneratedFor): string {
  const tokens = holder === 'workers'
    ? 'other instances do not accept these tokens'
    : 'instances do not accept each other\'s tokens'
  const retries = holder === 'workers'
    ? 'nor answer refresh retries of their rotations'
    : 'nor answer refresh retries of each other\'s rotations'
  return Number(refreshRetryWindowS) === 0
    ? `; ${tokens}`
    : `; ${tokens}, ${retries} (each a reuse, ending the session)`
}

export function generatedSecretWarning (
  algorithm: JwtAlgorithm,
  refreshRetryWindowS: string,
  holder: GeneratedFor
): string {
  const generated = holder === 'workers'
    ? 'one random secret was generated for every worker'
    : 'a random secret was generated'
  return algorithm === 'HS256'
    ? `JWT_SECRET is unset: ${generated}, so tokens, cursors and MFA enrolments do not survive a restart` +
      acrossInstances(refreshRetryWindowS, holder)
    : `JWT_SECRET is unset: ${generated}, so cursors and MFA enrolments do not survive a restart (it keys them under ${algorithm} too)`
}

function generatedKeyWarning (
  keyVariable: string,
  algorithm: AsymmetricAlgorithm,
  refreshRetryWindowS: string,
  holder: GeneratedFor
): string {
  const generated = holder === 'workers'
    ? `one ${algorithm} key pair was generated for every worker`
    : `a new ${algorithm} key pair was generated`
  const consequence = 'so tokens do not survive a restart and other services must fetch the JWKS again'
  return `${keyVariable} is unset: ${generated}, ${consequence}${acrossInstances(refreshRetryWindowS, holder)}`
}

export function randomSecret (): string {
  return randomBytes(32).toString('base64url')
}

/**
 * The signing key and every key still accepted. HS256 signs with JWT_SECRET; the others with
 * the private key, generated when unset (its tokens die with the process, like a generated
 * secret's).
 */
export function readSigningKeys (env: Env, jwtSecret: string, problems: string[], warnings: string[]): SigningKeys {
  const algorithm = env.JWT_ALGORITHM
  const keyVariable = env.JWT_PRIVATE_KEY_FILE === undefined ? 'JWT_PRIVATE_KEY' : 'JWT_PRIVATE_KEY_FILE'
  const pem = readPrivateKeyText(env, problems)
  let current: { signingKey: string, verification: VerificationKey } = {
    signingKey: jwtSecret,
    verification: secretKey(jwtSecret)
  }
  if (algorithm === 'HS256') {
    if (pem !== undefined) {
      problems.push(`${keyVariable} is only used with JWT_ALGORITHM EdDSA, ES256 or RS256 (JWT_ALGORITHM is HS256)`)
    }
  } else if (pem === undefined) {
    if (!problems.some((problem) => problem.startsWith('JWT_PRIVATE_KEY'))) {
      warnings.push(generatedKeyWarning(keyVariable, algorithm, env.REFRESH_RETRY_WINDOW_S, 'process'))
      current = privateKey(generateKeyPair(algorithm).privateKey, algorithm)
    }
  } else {
    try {
      current = privateKey(pem, algorithm)
    } catch (error) {
      if (!(error instanceof KeyError)) throw error
      problems.push(`${keyVariable} ${error.message}`)
    }
  }
  let previous: VerificationKey[] = []
  if (env.JWT_PREVIOUS_KEYS !== undefined) {
    try {
      previous = previousKeys(env.JWT_PREVIOUS_KEYS)
    } catch (error) {
      if (!(error instanceof KeyError)) throw error
      problems.push(`JWT_PREVIOUS_KEYS ${error.message}`)
    }
  }
  // A token's `iss` is a StringOrURI: a value with a colon must be a URI (docs/api.md, "Signing keys").
  if (env.JWT_ISSUER?.includes(':') === true && !isUri(env.JWT_ISSUER)) {
    problems.push(`JWT_ISSUER contains ":" but is not a URI${shown('JWT_ISSUER', env.JWT_ISSUER)}`)
  }
  // Other services verify these tokens, finding the keys through the discovery document
  // (docs/api.md, "Signing keys"): its issuer must be configured, not read from a request.
  if (algorithm !== 'HS256' && env.JWT_ISSUER === undefined) {
    problems.push(`JWT_ISSUER is required when JWT_ALGORITHM is ${algorithm}: other services verify its tokens, and without it the discovery document would take its issuer from the Host header of each request`)
  }
  return {
    signingKey: current.signingKey,
    current: current.verification,
    previous: previous.filter((key) => key.kid !== current.verification.kid),
    issuer: env.JWT_ISSUER ?? null
  }
}

/**
 * The sealing key ring (docs/operations.md, "Sealed secrets"): SEALING_KEY, or JWT_SECRET when
 * it is unset, seals; SEALING_PREVIOUS_KEYS still open what they sealed, and so do JWT_SECRET
 * and the signing secrets, current and former (JWT_PREVIOUS_KEYS), which sealed secrets before
 * sealing had a key of its own. None of it
 * depends on JWT_ALGORITHM: changing the algorithm opens everything as before.
 */
export function readSealingKeys (env: Env, jwtSecret: string, jwt: SigningKeys, problems: string[]): KeyMaterial[] {
  const previous = (env.SEALING_PREVIOUS_KEYS ?? '').split(/[\s,]+/).filter((key) => key !== '')
  previous.forEach((key, index) => {
    if (key.length < 32) problems.push(`SEALING_PREVIOUS_KEYS entry ${index + 1} is shorter than 32 characters`)
  })
  const formerSecrets = jwt.previous.filter((key) => key.algorithm === 'HS256').map((key) => key.key)
  const ring: KeyMaterial[] = [
    env.SEALING_KEY ?? jwtSecret, ...previous, jwtSecret, signingSecret(jwt), ...formerSecrets
  ]
  return ring.filter((key, index) => ring.findIndex((other) => Buffer.from(other).equals(Buffer.from(key))) === index)
}

/**
 * JWT_ALGORITHM alone, for a task that needs nothing else (keys:generate); undefined when
 * unset, ConfigError when not an algorithm.
 */
export function configuredAlgorithm (
  source: Record<string, string | undefined> = process.env
): JwtAlgorithm | undefined {
  const value = source.JWT_ALGORITHM
  if (value === undefined || value === '') return undefined
  const algorithm = JWT_ALGORITHMS.find((name) => name === value)
  if (algorithm === undefined) {
    throw new ConfigError([`JWT_ALGORITHM must be one of ${JWT_ALGORITHMS.join(', ')}${shown('JWT_ALGORITHM', value)}`])
  }
  return algorithm
}

/**
 * The signing material loadConfig generates when none is configured, generated once for
 * several processes: `npm run start:cluster`'s primary hands these variables to every worker
 * (docs/operations.md, "One host, several cores"), so the workers sign with one JWT_SECRET and,
 * under EdDSA, ES256 or RS256, one private key, and accept each other's tokens. The warnings
 * say so in place of the workers' own. A bad JWT_ALGORITHM gets nothing: the workers'
 * configuration check reports it.
 */
export function sharedSigningVariables (
  source: Record<string, string | undefined> = process.env
): { variables: Record<string, string>, warnings: string[] } {
  let algorithm: JwtAlgorithm
  try {
    algorithm = configuredAlgorithm(source) ?? EnvSchema.properties.JWT_ALGORITHM.default
  } catch (error) {
    if (error instanceof ConfigError) return { variables: {}, warnings: [] }
    throw error
  }
  const unset = (name: string) => source[name] === undefined || source[name] === ''
  const refreshRetryWindowS = unset('REFRESH_RETRY_WINDOW_S')
    ? EnvSchema.properties.REFRESH_RETRY_WINDOW_S.default
    : String(source.REFRESH_RETRY_WINDOW_S)
  const variables: Record<string, string> = {}
  const warnings: string[] = []
  if (unset('JWT_SECRET')) {
    variables.JWT_SECRET = randomSecret()
    warnings.push(generatedSecretWarning(algorithm, refreshRetryWindowS, 'workers'))
  }
  if (algorithm !== 'HS256' && unset('JWT_PRIVATE_KEY') && unset('JWT_PRIVATE_KEY_FILE')) {
    variables.JWT_PRIVATE_KEY = generateKeyPair(algorithm).privateKey
    warnings.push(generatedKeyWarning('JWT_PRIVATE_KEY', algorithm, refreshRetryWindowS, 'workers'))
  }
  return { variables, warnings }
}
