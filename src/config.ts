import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ROLES, type Role } from '../schemas/rbac.js'
import { passwordPolicyProblems } from './security/password-policy.js'
import { isSensitiveKey, REDACTED } from './security/redaction.js'
import { type AsymmetricAlgorithm, generateKeyPair, JWT_ALGORITHMS, type JwtAlgorithm, KeyError, previousKeys, privateKey, secretKey, type SigningKeys, type VerificationKey } from './security/signing-keys.js'
import { ACCESS_TOKEN_TTL_S } from './security/tokens.js'

/**
 * Environment → validated, typed configuration (docs/operations.md, "Configuration"). Every
 * variable is read here and nowhere else; a bad value stops start-up with a message naming
 * the variable.
 */

/** Each rule's `description` completes the sentence "<VARIABLE> must be …". */
const positiveInteger = (fallback: string) =>
  Type.String({ default: fallback, pattern: '^[1-9][0-9]{0,9}$', description: 'a positive integer' })
const commaList = (fallback?: string) =>
  Type.String({ default: fallback, pattern: '^[^,]*(,[^,]*)*$', description: 'a comma-separated list' })
const oneOf = <const T extends string>(values: readonly T[], fallback: T) =>
  Type.Union(values.map((value) => Type.Literal(value)), { default: fallback, description: `one of ${values.join(', ')}` })

const EnvSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  PORT: Type.String({ default: '3000', pattern: '^[0-9]{1,5}$', description: 'a port number' }),
  HOST: Type.String({ default: '127.0.0.1' }),
  DATABASE_URL: Type.String({
    default: 'sqlite://./data/app.db',
    pattern: '^(sqlite|postgres|postgresql)://.+',
    description: 'a sqlite://, postgres:// or postgresql:// URL'
  }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://.+', description: 'a redis:// or rediss:// URL' })),
  JWT_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'at least 32 characters long' })),
  JWT_ALGORITHM: oneOf(JWT_ALGORITHMS, 'HS256'),
  JWT_PRIVATE_KEY: Type.Optional(Type.String()),
  JWT_PRIVATE_KEY_FILE: Type.Optional(Type.String()),
  JWT_PREVIOUS_KEYS: Type.Optional(Type.String()),
  JWT_ISSUER: Type.Optional(Type.String({ maxLength: 2048, pattern: '^[^\\s\\u0000-\\u001f\\u007f-\\u009f]+$', description: 'a name or URI without white space or control characters' })),
  CORS_ORIGINS: Type.Optional(commaList()),
  TRUST_PROXY: Type.String({ default: 'false' }),
  RATE_LIMIT_MAX: positiveInteger('100'),
  RATE_LIMIT_WINDOW_MS: positiveInteger('60000'),
  RATE_LIMIT_AUTH_MAX: positiveInteger('10'),
  RATE_LIMIT_ADMIN_MAX: positiveInteger('5'),
  ADMIN_EMAIL: Type.Optional(Type.String({ maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', description: 'an e-mail address' })),
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 8, maxLength: 128, description: '8 to 128 characters long' })),
  MFA_ISSUER: Type.String({ default: 'Users API', maxLength: 100, description: 'at most 100 characters long' }),
  MFA_REQUIRED_ROLES: commaList('admin,super_admin'),
  WEBAUTHN_RP_ID: Type.String({ default: 'localhost', maxLength: 253, pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$', description: 'a lower-case domain name' }),
  WEBAUTHN_RP_NAME: Type.Optional(Type.String({ maxLength: 100, description: 'at most 100 characters long' })),
  WEBAUTHN_ORIGINS: commaList('http://localhost:3000'),
  SESSION_IDLE_TIMEOUT_S: positiveInteger('1800'),
  SESSION_ABSOLUTE_TIMEOUT_S: positiveInteger('28800'),
  SESSION_MAX_CONCURRENT: positiveInteger('3'),
  REFRESH_RETRY_WINDOW_S: Type.String({ default: '10', pattern: '^[0-9]{1,10}$', description: 'a whole number of seconds' }),
  PASSWORD_POLICY: oneOf(['basic', 'strong'], 'basic'),
  TRUSTED_NETWORKS: commaList('192.168.1.0/24,10.0.0.0/8,172.16.0.0/12'),
  ZERO_TRUST_MODE: oneOf(['off', 'monitor', 'enforce'], 'monitor'),
  AUDIT_RETENTION_DAYS: positiveInteger('90'),
  OAUTH_PROVIDERS: Type.Optional(commaList()),
  OAUTH_REDIRECT_URLS: Type.Optional(commaList()),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://\\S+$', description: 'an smtp:// or smtps:// URL' })),
  MAIL_FROM: Type.String({ default: 'Users API <no-reply@localhost>', maxLength: 320, pattern: '^[^\\r\\n<>]*<?[^\\s@<>]+@[^\\s@<>]+>?$', description: 'a sender address, optionally with a name (Name <address>)' }),
  APP_URL: Type.Optional(Type.String({ pattern: '^https?://\\S+$', description: 'an http(s) URL' })),
  EMAIL_VERIFICATION: oneOf(['off', 'optional', 'required'], 'optional'),
  SMS_WEBHOOK_URL: Type.Optional(Type.String({ pattern: '^https?://\\S+$', description: 'an http(s) URL' })),
  MAIL_RETRY_MS: positiveInteger('5000'),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info')
})
type Env = Static<typeof EnvSchema>

/** The providers known by name; any other is configured by its issuer (docs/api.md, "OAuth sign-in"). */
export const BUILT_IN_OAUTH_PROVIDERS = ['google', 'github', 'microsoft'] as const
export type BuiltInOAuthProvider = typeof BUILT_IN_OAUTH_PROVIDERS[number]

export interface OAuthEndpoints {
  authUrl: string
  tokenUrl: string
  userinfoUrl: string
}

/**
 * One provider's client registration. With an issuer, its endpoints and keys come from the
 * issuer's discovery document and its ID token is validated; without, the fixed endpoints.
 */
export type OAuthProviderConfig = {
  clientId: string
  clientSecret: string
  redirectUri: string
  scopes: string[]
} & ({ issuer: string } | ({ issuer: null } & OAuthEndpoints))

/**
 * Public endpoints and usual sign-in scopes, overridable per variable. Google is an OpenID
 * provider with one issuer, so it is discovered from it unless its endpoints are overridden;
 * Microsoft's `common` endpoint answers for every tenant, each with an issuer of its own, so it
 * needs OAUTH_MICROSOFT_ISSUER (one tenant) for its ID token to be validated.
 */
const OAUTH_DEFAULTS: Record<BuiltInOAuthProvider, OAuthEndpoints & { scopes: string[], issuer?: string }> = {
  google: {
    issuer: 'https://accounts.google.com',
    scopes: ['openid', 'email', 'profile'],
    authUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
    tokenUrl: 'https://oauth2.googleapis.com/token',
    userinfoUrl: 'https://openidconnect.googleapis.com/v1/userinfo'
  },
  github: {
    scopes: ['read:user', 'user:email'],
    authUrl: 'https://github.com/login/oauth/authorize',
    tokenUrl: 'https://github.com/login/oauth/access_token',
    userinfoUrl: 'https://api.github.com/user'
  },
  microsoft: {
    scopes: ['openid', 'email', 'profile', 'User.Read'],
    authUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/authorize',
    tokenUrl: 'https://login.microsoftonline.com/common/oauth2/v2.0/token',
    userinfoUrl: 'https://graph.microsoft.com/oidc/userinfo'
  }
}
const OIDC_SCOPES = ['openid', 'email', 'profile']
/** A provider's name as it appears in paths and in its variables' names. */
const PROVIDER_NAME = /^[a-z][a-z0-9_]{0,31}$/

export type DatabaseConfig =
  | { dialect: 'sqlite', url: string, path: string }
  | { dialect: 'postgres', url: string }

export interface Config {
  nodeEnv: string
  port: number
  host: string
  database: DatabaseConfig
  redisUrl: string | null
  jwtSecret: string
  /** Token signing and verification keys (docs/api.md, "Signing keys"). */
  jwt: SigningKeys
  /** null: every origin allowed. */
  corsOrigins: string[] | null
  /** Fastify `trustProxy`: false, true (any proxy), or the proxies' addresses/CIDRs. */
  trustProxy: boolean | string[]
  rateLimit: { max: number, windowMs: number, authMax: number, adminMax: number }
  admin: { email: string, password: string } | null
  mfa: { issuer: string, requiredRoles: Role[] }
  /** The relying party passkeys are made for and the origins their ceremonies may run on (docs/api.md, "Passkeys"). */
  webauthn: { rpId: string, rpName: string, origins: string[] }
  session: {
    idleTimeoutS: number
    absoluteTimeoutS: number
    maxConcurrent: number
    /** A spent refresh token presented again this soon after its rotation gets the same pair (docs/api.md, "Sessions"); 0: never. */
    refreshRetryWindowS: number
  }
  passwordPolicy: 'basic' | 'strong'
  /** The enabled providers by lower-case name. */
  oauth: Record<string, OAuthProviderConfig>
  /** Where browser applications may be sent back after a provider sign-in (prefixes); null: that mode is off. */
  oauthRedirectUrls: string[] | null
  trustedNetworks: string[]
  zeroTrustMode: 'off' | 'monitor' | 'enforce'
  auditRetentionDays: number
  messages: {
    /** null: messages are written to the log. */
    smtpUrl: string | null
    from: string
    /** Front-end base URL for the links in messages; null: messages carry the bare token. */
    appUrl: string | null
    emailVerification: 'off' | 'optional' | 'required'
    smsWebhookUrl: string | null
    /** The first retry of a message that could not be delivered waits this long; each next one twice as long. */
    retryMs: number
  }
  logLevel: Env['LOG_LEVEL']
  /** Start-up notices to log once the logger exists (insecure but allowed settings). */
  warnings: string[]
}

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`)
    this.name = 'ConfigError'
  }
}

function list (value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim()).filter((item) => item.length > 0)
}

/** `a.b.c.d/n` or `x::y/n`; a bare address counts as a single-host network. */
export function isCidr (value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  if (!/^[0-9]{1,3}$/.test(prefix)) return false
  return Number(prefix) <= (family === 4 ? 32 : 128)
}

function parseDatabaseUrl (url: string): DatabaseConfig {
  if (url.startsWith('sqlite://')) return { dialect: 'sqlite', url, path: url.slice('sqlite://'.length) }
  return { dialect: 'postgres', url }
}

/** Whether `value` parses as an absolute URI (a scheme, then anything the URL parser accepts). */
function isUri (value: string): boolean {
  return URL.canParse(value)
}

/** An http(s) URL. */
export function isHttpUrl (value: string): boolean {
  try {
    const { protocol } = new URL(value)
    return protocol === 'http:' || protocol === 'https:'
  } catch {
    return false
  }
}

/** An http(s) URL without query or fragment: one that other addresses can be built on. */
export function isHttpBase (value: string): boolean {
  return isHttpUrl(value) && !/[?#]/.test(value)
}

/** One of the providers the service knows without configuration. */
export function isBuiltIn (name: string): name is BuiltInOAuthProvider {
  return (BUILT_IN_OAUTH_PROVIDERS as readonly string[]).includes(name)
}

/**
 * OAUTH_PROVIDERS names the enabled providers; unset, the built-in ones with a client id. A
 * provider with `_ISSUER` is discovered from it; a built-in one without uses its endpoints.
 */
function readOAuth (env: Record<string, string | undefined>, problems: string[]): Config['oauth'] {
  const oauth: Config['oauth'] = {}
  const listed = env.OAUTH_PROVIDERS === undefined ? null : list(env.OAUTH_PROVIDERS).map((name) => name.toLowerCase())
  const names = listed ?? BUILT_IN_OAUTH_PROVIDERS.filter((name) => env[`OAUTH_${name.toUpperCase()}_CLIENT_ID`] !== undefined)
  for (const name of new Set(names)) {
    if (!PROVIDER_NAME.test(name)) {
      problems.push(`OAUTH_PROVIDERS names must be a letter then up to 31 letters, digits or underscores${shown('OAUTH_PROVIDERS', name)}`)
      continue
    }
    const prefix = `OAUTH_${name.toUpperCase()}_`
    const read = (variable: string, fallback?: string) => {
      const value = env[prefix + variable] ?? fallback
      if (value === undefined) problems.push(`${prefix}${variable} is required when OAuth provider ${name} is enabled`)
      return value ?? ''
    }
    const url = (variable: string, fallback?: string) => {
      const value = read(variable, fallback)
      if (value !== '' && !isHttpUrl(value)) problems.push(`${prefix}${variable} must be an http(s) URL${shown(prefix + variable, value)}`)
      return value
    }
    const client = { clientId: read('CLIENT_ID'), clientSecret: read('CLIENT_SECRET'), redirectUri: url('REDIRECT_URI') }
    const scopes = env[`${prefix}SCOPES`]?.split(/[\s,]+/).filter((scope) => scope.length > 0)
    const overridden = ['AUTH_URL', 'TOKEN_URL', 'USERINFO_URL'].some((variable) => env[prefix + variable] !== undefined)
    const issuer = env[`${prefix}ISSUER`] ?? (isBuiltIn(name) && !overridden ? OAUTH_DEFAULTS[name].issuer : undefined)
    if (issuer !== undefined) {
      if (!isHttpBase(issuer)) problems.push(`${prefix}ISSUER must be an http(s) URL without query or fragment${shown(`${prefix}ISSUER`, issuer)}`)
      oauth[name] = { ...client, scopes: scopes ?? (isBuiltIn(name) ? OAUTH_DEFAULTS[name].scopes : OIDC_SCOPES), issuer }
    } else if (isBuiltIn(name)) {
      const defaults = OAUTH_DEFAULTS[name]
      oauth[name] = {
        ...client,
        scopes: scopes ?? [...defaults.scopes],
        issuer: null,
        authUrl: url('AUTH_URL', defaults.authUrl),
        tokenUrl: url('TOKEN_URL', defaults.tokenUrl),
        userinfoUrl: url('USERINFO_URL', defaults.userinfoUrl)
      }
    } else {
      problems.push(`${prefix}ISSUER is required: ${name} is not a built-in provider (${BUILT_IN_OAUTH_PROVIDERS.join(', ')})`)
    }
  }
  return oauth
}

/**
 * OAUTH_REDIRECT_URLS: http(s) URLs without query or fragment, in the parser's form (an entry
 * that is only an origin gets its `/`, and so admits every path of that origin). A return URL
 * matches an entry on its origin and a path boundary (OAuthService, docs/api.md "Browser
 * applications").
 */
function readRedirectUrls (value: string | undefined, problems: string[]): string[] | null {
  if (value === undefined) return null
  const entries = list(value)
  const bad = entries.filter((entry) => !isHttpBase(entry))
  if (bad.length > 0 || entries.length === 0) {
    problems.push(`OAUTH_REDIRECT_URLS must be a comma-separated list of http(s) URLs without query or fragment${shown('OAUTH_REDIRECT_URLS', value)}`)
    return null
  }
  return entries.map((entry) => new URL(entry).href)
}

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
    problems.push(`JWT_PRIVATE_KEY_FILE must name a readable file (${(error as NodeJS.ErrnoException).code ?? 'unreadable'}: "${env.JWT_PRIVATE_KEY_FILE}")`)
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
  const tokens = holder === 'workers' ? 'other instances do not accept these tokens' : 'instances do not accept each other\'s tokens'
  const retries = holder === 'workers' ? 'nor answer refresh retries of their rotations' : 'nor answer refresh retries of each other\'s rotations'
  return Number(refreshRetryWindowS) === 0 ? `; ${tokens}` : `; ${tokens}, ${retries} (each a reuse, ending the session)`
}

function generatedSecretWarning (algorithm: JwtAlgorithm, refreshRetryWindowS: string, holder: GeneratedFor): string {
  const generated = holder === 'workers' ? 'one random secret was generated for every worker' : 'a random secret was generated'
  return algorithm === 'HS256'
    ? `JWT_SECRET is unset: ${generated}, so tokens, cursors and MFA enrolments do not survive a restart${acrossInstances(refreshRetryWindowS, holder)}`
    : `JWT_SECRET is unset: ${generated}, so cursors and MFA enrolments do not survive a restart (it keys them under ${algorithm} too)`
}

function generatedKeyWarning (keyVariable: string, algorithm: AsymmetricAlgorithm, refreshRetryWindowS: string, holder: GeneratedFor): string {
  const generated = holder === 'workers' ? `one ${algorithm} key pair was generated for every worker` : `a new ${algorithm} key pair was generated`
  return `${keyVariable} is unset: ${generated}, so tokens do not survive a restart and other services must fetch the JWKS again${acrossInstances(refreshRetryWindowS, holder)}`
}

function randomSecret (): string {
  return randomBytes(32).toString('base64url')
}

/**
 * The signing key and every key still accepted. HS256 signs with JWT_SECRET; the others with
 * the private key, generated when unset (its tokens die with the process, like a generated
 * secret's).
 */
function readSigningKeys (env: Env, jwtSecret: string, problems: string[], warnings: string[]): SigningKeys {
  const algorithm = env.JWT_ALGORITHM
  const keyVariable = env.JWT_PRIVATE_KEY_FILE === undefined ? 'JWT_PRIVATE_KEY' : 'JWT_PRIVATE_KEY_FILE'
  const pem = readPrivateKeyText(env, problems)
  let current: { signingKey: string, verification: VerificationKey } = { signingKey: jwtSecret, verification: secretKey(jwtSecret) }
  if (algorithm === 'HS256') {
    if (pem !== undefined) problems.push(`${keyVariable} is only used with JWT_ALGORITHM EdDSA, ES256 or RS256 (JWT_ALGORITHM is HS256)`)
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
  if (env.JWT_ISSUER?.includes(':') === true && !isUri(env.JWT_ISSUER)) problems.push(`JWT_ISSUER contains ":" but is not a URI${shown('JWT_ISSUER', env.JWT_ISSUER)}`)
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

function readTrustProxy (value: string, problems: string[], warnings: string[]): Config['trustProxy'] {
  if (value === 'false') return false
  if (value === 'true') {
    warnings.push('TRUST_PROXY=true trusts any X-Forwarded-For, which clients can forge; list your proxies instead')
    return true
  }
  const proxies = list(value)
  const bad = proxies.filter((proxy) => !isCidr(proxy))
  if (bad.length > 0 || proxies.length === 0) {
    problems.push(`TRUST_PROXY must be true, false or a comma-separated list of addresses/CIDRs (got "${value}")`)
  }
  return proxies
}

/**
 * Passkey origins: each an http(s) origin (no path) on the relying-party id or one of its
 * subdomains, since browsers refuse a ceremony for an RP ID the page's host is not within.
 */
function readWebauthnOrigins (value: string, rpId: string, problems: string[]): string[] {
  const origins = list(value)
  if (origins.length === 0) problems.push('WEBAUTHN_ORIGINS must list at least one origin')
  for (const origin of origins) {
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    if (parsed === undefined || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
      problems.push(`WEBAUTHN_ORIGINS has an entry that is not an origin like https://example.com: ${origin}`)
    } else if (parsed.hostname !== rpId && !parsed.hostname.endsWith(`.${rpId}`)) {
      problems.push(`WEBAUTHN_ORIGINS has an origin outside WEBAUTHN_RP_ID ${rpId}: ${origin}`)
    }
  }
  return origins
}

/**
 * A refused value as the start-up error may show it: error output ends up in logs and CI
 * transcripts, so secrets are not repeated, nor the password inside a connection URL.
 */
function shown (name: string, value: unknown): string {
  if (isSensitiveKey(name)) return ''
  const text = String(value).replace(/\/\/([^:/@]*):[^@/]*@/, `//$1:${REDACTED}@`)
  return ` (got "${text}")`
}

/**
 * JWT_ALGORITHM alone, for a task that needs nothing else (keys:generate); undefined when
 * unset, ConfigError when not an algorithm.
 */
export function configuredAlgorithm (source: Record<string, string | undefined> = process.env): JwtAlgorithm | undefined {
  const value = source.JWT_ALGORITHM
  if (value === undefined || value === '') return undefined
  const algorithm = JWT_ALGORITHMS.find((name) => name === value)
  if (algorithm === undefined) throw new ConfigError([`JWT_ALGORITHM must be one of ${JWT_ALGORITHMS.join(', ')}${shown('JWT_ALGORITHM', value)}`])
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
export function sharedSigningVariables (source: Record<string, string | undefined> = process.env): { variables: Record<string, string>, warnings: string[] } {
  let algorithm: JwtAlgorithm
  try {
    algorithm = configuredAlgorithm(source) ?? EnvSchema.properties.JWT_ALGORITHM.default
  } catch (error) {
    if (error instanceof ConfigError) return { variables: {}, warnings: [] }
    throw error
  }
  const unset = (name: string) => source[name] === undefined || source[name] === ''
  const refreshRetryWindowS = unset('REFRESH_RETRY_WINDOW_S') ? EnvSchema.properties.REFRESH_RETRY_WINDOW_S.default : String(source.REFRESH_RETRY_WINDOW_S)
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

/** Reads and validates the configuration; throws ConfigError listing every bad variable. */
export function loadConfig (source: Record<string, string | undefined> = process.env): Config {
  // Empty variables count as unset, as most deployment tools write them.
  const present = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''))
  const read = Value.Default(EnvSchema, Value.Clean(EnvSchema, { ...present })) as Record<string, unknown>
  const refusals = new Map([...Value.Errors(EnvSchema, read)].map((error) => [error.path.slice(1),
    `${error.path.slice(1)} must be ${String(error.schema.description ?? error.message)}${shown(error.path.slice(1), error.value)}`]))
  // The checks below run on the other variables (a refused one as if unset), so every problem
  // is reported at once; one they find in a refused variable follows from its refusal.
  const env = Value.Default(EnvSchema, Object.fromEntries(Object.entries(read).filter(([name]) => !refusals.has(name)))) as Env
  const problems: string[] = []
  const followsFromRefusal = (problem: string) => [...refusals.keys()].some((name) => new RegExp(`\\b${name}\\b`).test(problem))

  const warnings: string[] = []
  const port = Number(env.PORT)
  if (port > 65535) problems.push(`PORT must be at most 65535 (got "${env.PORT}")`)

  // A retried refresh answers the access token issued at the rotation: kept longer, it would have expired.
  const refreshRetryWindowS = Number(env.REFRESH_RETRY_WINDOW_S)
  if (refreshRetryWindowS > ACCESS_TOKEN_TTL_S) problems.push(`REFRESH_RETRY_WINDOW_S must be at most ${ACCESS_TOKEN_TTL_S}, the access token's lifetime (got "${env.REFRESH_RETRY_WINDOW_S}")`)

  const corsOrigins = env.CORS_ORIGINS === undefined ? null : list(env.CORS_ORIGINS)
  if (corsOrigins === null) {
    if (env.NODE_ENV === 'production') problems.push('CORS_ORIGINS must be set when NODE_ENV=production')
    else warnings.push('CORS_ORIGINS is unset: every origin is allowed (refused with NODE_ENV=production)')
  }

  // `none`: no role must use MFA.
  const requiredRoles = env.MFA_REQUIRED_ROLES.trim() === 'none' ? [] : list(env.MFA_REQUIRED_ROLES)
  const unknownRoles = requiredRoles.filter((role) => !(ROLES as readonly string[]).includes(role))
  if (unknownRoles.length > 0) problems.push(`MFA_REQUIRED_ROLES has unknown roles: ${unknownRoles.join(', ')} (known: ${ROLES.join(', ')})`)

  const trustedNetworks = list(env.TRUSTED_NETWORKS)
  const badNetworks = trustedNetworks.filter((network) => !isCidr(network))
  if (badNetworks.length > 0) problems.push(`TRUSTED_NETWORKS has malformed CIDRs: ${badNetworks.join(', ')}`)

  if (env.ADMIN_PASSWORD !== undefined) {
    // The bootstrap administrator's password meets the policy every other password meets.
    const unmet = passwordPolicyProblems(env.ADMIN_PASSWORD, env.PASSWORD_POLICY)
    if (unmet.length > 0) problems.push(`ADMIN_PASSWORD is refused by PASSWORD_POLICY=${env.PASSWORD_POLICY}: it ${unmet.join(', ')}`)
  }
  if ((env.ADMIN_EMAIL === undefined) !== (env.ADMIN_PASSWORD === undefined)) {
    problems.push(`${env.ADMIN_EMAIL === undefined ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD'} is required when ${env.ADMIN_EMAIL === undefined ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL'} is set`)
  }

  const webauthnOrigins = readWebauthnOrigins(env.WEBAUTHN_ORIGINS, env.WEBAUTHN_RP_ID, problems)
  const trustProxy = readTrustProxy(env.TRUST_PROXY, problems, warnings)
  const oauth = readOAuth(present, problems)
  const oauthRedirectUrls = readRedirectUrls(env.OAUTH_REDIRECT_URLS, problems)
  const jwtSecret = env.JWT_SECRET ?? randomSecret()
  const jwt = readSigningKeys(env, jwtSecret, problems, warnings)
  if (refusals.size > 0 || problems.length > 0) throw new ConfigError([...refusals.values(), ...problems.filter((problem) => !followsFromRefusal(problem))])

  if (env.SMTP_URL === undefined) warnings.push('SMTP_URL is unset: e-mail messages (verification, password reset, notices) are written to the log, not sent')
  if (env.JWT_SECRET === undefined) warnings.push(generatedSecretWarning(env.JWT_ALGORITHM, env.REFRESH_RETRY_WINDOW_S, 'process'))

  return {
    nodeEnv: env.NODE_ENV,
    port,
    host: env.HOST,
    database: parseDatabaseUrl(env.DATABASE_URL),
    redisUrl: env.REDIS_URL ?? null,
    jwtSecret,
    jwt,
    corsOrigins,
    trustProxy,
    rateLimit: {
      max: Number(env.RATE_LIMIT_MAX),
      windowMs: Number(env.RATE_LIMIT_WINDOW_MS),
      authMax: Number(env.RATE_LIMIT_AUTH_MAX),
      adminMax: Number(env.RATE_LIMIT_ADMIN_MAX)
    },
    admin: env.ADMIN_EMAIL !== undefined && env.ADMIN_PASSWORD !== undefined
      ? { email: env.ADMIN_EMAIL, password: env.ADMIN_PASSWORD }
      : null,
    mfa: { issuer: env.MFA_ISSUER, requiredRoles: requiredRoles as Role[] },
    webauthn: { rpId: env.WEBAUTHN_RP_ID, rpName: env.WEBAUTHN_RP_NAME ?? env.MFA_ISSUER, origins: webauthnOrigins },
    session: {
      idleTimeoutS: Number(env.SESSION_IDLE_TIMEOUT_S),
      absoluteTimeoutS: Number(env.SESSION_ABSOLUTE_TIMEOUT_S),
      maxConcurrent: Number(env.SESSION_MAX_CONCURRENT),
      refreshRetryWindowS
    },
    passwordPolicy: env.PASSWORD_POLICY,
    oauth,
    oauthRedirectUrls,
    trustedNetworks,
    zeroTrustMode: env.ZERO_TRUST_MODE,
    auditRetentionDays: Number(env.AUDIT_RETENTION_DAYS),
    messages: {
      smtpUrl: env.SMTP_URL ?? null,
      from: env.MAIL_FROM,
      appUrl: env.APP_URL === undefined ? null : env.APP_URL.replace(/\/+$/, ''),
      emailVerification: env.EMAIL_VERIFICATION,
      smsWebhookUrl: env.SMS_WEBHOOK_URL ?? null,
      retryMs: Number(env.MAIL_RETRY_MS)
    },
    logLevel: env.LOG_LEVEL,
    warnings
  }
}
