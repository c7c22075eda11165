import { ROLES, type Role } from '../../schemas/rbac.js'
import { passwordPolicyProblems } from '../security/password-policy.js'
import type { KeyMaterial } from '../security/secret-box.js'
import type { SigningKeys } from '../security/signing-keys.js'
import { ACCESS_TOKEN_TTL_S } from '../security/tokens.js'
import { type DatabaseConfig, isCidr, isHttpBase, parseDatabaseUrl, readTrustProxy, readWebauthnOrigins } from './addresses.js'
import { type Env, list, readEnvironment } from './environment.js'
import { type OAuthProviderConfig, readOAuth, readRedirectUrls } from './oauth-providers.js'
import { ConfigError } from './problems.js'
import { generatedSecretWarning, randomSecret, readSealingKeys, readSigningKeys } from './signing-keys.js'

/**
 * Environment → validated, typed configuration (docs/operations.md, "Configuration"). Every
 * variable is read here and nowhere else; a bad value stops start-up with a message naming
 * the variable.
 */

export { type DatabaseConfig, isHttpUrl } from './addresses.js'
export {
  BUILT_IN_OAUTH_PROVIDERS,
  type BuiltInOAuthProvider,
  isBuiltIn,
  type OAuthEndpoints,
  type OAuthProviderConfig
} from './oauth-providers.js'
export { ConfigError } from './problems.js'
export { configuredAlgorithm, sharedSigningVariables } from './signing-keys.js'
export { workerCount } from './workers.js'

export interface Config {
  nodeEnv: string
  port: number
  host: string
  database: DatabaseConfig
  redisUrl: string | null
  jwtSecret: string
  /** Token signing and verification keys (docs/api.md, "Signing keys"). */
  jwt: SigningKeys
  /**
   * What secrets at rest are sealed under (docs/operations.md, "Sealed secrets"): the first key
   * seals, every key opens; `drawnAtStart` when neither SEALING_KEY nor JWT_SECRET is set, so
   * that nothing sealed survives a restart.
   */
  sealing: { keys: KeyMaterial[], drawnAtStart: boolean }
  /**
   * The service's own address as browsers and identity providers reach it, without a trailing
   * slash (PUBLIC_URL; http://localhost:PORT by default): SAML's ACS and metadata URLs are made from it.
   */
  publicUrl: string
  /** null: every origin allowed. */
  corsOrigins: string[] | null
  /** Fastify `trustProxy`: false, true (any proxy), or the proxies' addresses/CIDRs. */
  trustProxy: boolean | string[]
  rateLimit: { max: number, windowMs: number, authMax: number, adminMax: number }
  admin: { email: string, password: string } | null
  mfa: { issuer: string, requiredRoles: Role[] }
  /**
   * The relying party passkeys are made for and the origins their ceremonies may run on
   * (docs/api.md, "Passkeys").
   */
  webauthn: { rpId: string, rpName: string, origins: string[] }
  session: {
    idleTimeoutS: number
    absoluteTimeoutS: number
    maxConcurrent: number
    /**
     * A spent refresh token presented again this soon after its rotation gets the same pair
     * (docs/api.md, "Sessions"); 0: never.
     */
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
  /** How many matches a filtered collection counts (docs/api.md, "Collections at scale"). */
  collectionCountLimit: number
  messages: {
    /** null: messages are written to the log. */
    smtpUrl: string | null
    from: string
    /** Front-end base URL for the links in messages; null: messages carry the bare token. */
    appUrl: string | null
    emailVerification: 'off' | 'optional' | 'required'
    /** Sign-in by a code or link sent by e-mail: off, existing accounts only, or making accounts too (docs/api.md). */
    emailSignIn: 'off' | 'existing' | 'on'
    smsWebhookUrl: string | null
    /** The first retry of a message that could not be delivered waits this long; each next one twice as long. */
    retryMs: number
  }
  /** New passwords against a breach corpus (docs/security.md, "Breached passwords"). */
  passwordBreachCheck: { mode: Env['PASSWORD_BREACH_CHECK'], apiUrl: string }
  /**
   * CIDRs an SSO connection's IdP metadata URL may reach besides public addresses: apart from the
   * webhooks' list, as any organization's owner enters these URLs (docs/security.md, "SAML").
   */
  ssoMetadataAllowedNetworks: string[]
  webhooks: {
    /** CIDRs webhook deliveries may reach besides public addresses (docs/security.md, "Webhooks"). */
    allowedNetworks: string[]
    timeoutMs: number
    retentionDays: number
  }
  /** Days between a holder's request to delete their account and its erasure; 0: at once. */
  accountDeletionGraceDays: number
  /** Scopes machine clients of the authorization server may be given (AUTHORIZATION_SERVER_SCOPES). */
  authorizationServerScopes: string[]
  /** The initial access token of dynamic client registration (RFC 7591); null: registration is off. */
  authorizationServerRegistrationToken: string | null
  /** Where every audit entry is also written: NDJSON to stdout or a file, or `audit.entry` webhook events. */
  auditStream: { kind: Env['AUDIT_STREAM'], file: string | null }
  logLevel: Env['LOG_LEVEL']
  /** Start-up notices to log once the logger exists (insecure but allowed settings). */
  warnings: string[]
}

/** Reads and validates the configuration; throws ConfigError listing every bad variable. */
export function loadConfig (source: Record<string, string | undefined> = process.env): Config {
  const { present, env, refusals } = readEnvironment(source)
  const problems: string[] = []
  // A problem the checks below find in a refused variable follows from its refusal.
  const followsFromRefusal = (problem: string) =>
    [...refusals.keys()].some((name) => new RegExp(`\\b${name}\\b`).test(problem))

  const warnings: string[] = []
  const port = Number(env.PORT)
  if (port > 65535) problems.push(`PORT must be at most 65535 (got "${env.PORT}")`)

  // A retried refresh answers the access token issued at the rotation: kept longer, it would have expired.
  const refreshRetryWindowS = Number(env.REFRESH_RETRY_WINDOW_S)
  if (refreshRetryWindowS > ACCESS_TOKEN_TTL_S) {
    problems.push(`REFRESH_RETRY_WINDOW_S must be at most ${ACCESS_TOKEN_TTL_S}, the access token's lifetime (got "${env.REFRESH_RETRY_WINDOW_S}")`)
  }

  const corsOrigins = env.CORS_ORIGINS === undefined ? null : list(env.CORS_ORIGINS)
  if (corsOrigins === null) {
    if (env.NODE_ENV === 'production') problems.push('CORS_ORIGINS must be set when NODE_ENV=production')
    else warnings.push('CORS_ORIGINS is unset: every origin is allowed (refused with NODE_ENV=production)')
  }

  // `none`: no role must use MFA.
  const requiredRoles = env.MFA_REQUIRED_ROLES.trim() === 'none' ? [] : list(env.MFA_REQUIRED_ROLES)
  const unknownRoles = requiredRoles.filter((role) => !(ROLES as readonly string[]).includes(role))
  if (unknownRoles.length > 0) {
    problems.push(`MFA_REQUIRED_ROLES has unknown roles: ${unknownRoles.join(', ')} (known: ${ROLES.join(', ')})`)
  }

  const trustedNetworks = list(env.TRUSTED_NETWORKS)
  const badNetworks = trustedNetworks.filter((network) => !isCidr(network))
  if (badNetworks.length > 0) problems.push(`TRUSTED_NETWORKS has malformed CIDRs: ${badNetworks.join(', ')}`)

  if (env.NODE_ENV === 'production' && env.PASSWORD_BREACH_CHECK === 'off') {
    warnings.push('PASSWORD_BREACH_CHECK is off: new passwords are not checked against known breaches (set block)')
  }
  /** A list of networks outbound requests may reach besides public addresses, its malformed entries a problem. */
  const outboundNetworks = (name: 'WEBHOOK_ALLOWED_NETWORKS' | 'SSO_METADATA_ALLOWED_NETWORKS'): string[] => {
    const networks = list(env[name])
    const bad = networks.filter((network) => !isCidr(network))
    if (bad.length > 0) problems.push(`${name} has malformed CIDRs: ${bad.join(', ')}`)
    return networks
  }
  const webhookNetworks = outboundNetworks('WEBHOOK_ALLOWED_NETWORKS')
  const ssoMetadataNetworks = outboundNetworks('SSO_METADATA_ALLOWED_NETWORKS')
  if (env.AUDIT_STREAM === 'file' && env.AUDIT_STREAM_FILE === undefined) problems.push('AUDIT_STREAM_FILE is required when AUDIT_STREAM=file')

  if (env.ADMIN_PASSWORD !== undefined) {
    // The bootstrap administrator's password meets the policy every other password meets.
    const unmet = passwordPolicyProblems(env.ADMIN_PASSWORD, env.PASSWORD_POLICY)
    if (unmet.length > 0) {
      problems.push(`ADMIN_PASSWORD is refused by PASSWORD_POLICY=${env.PASSWORD_POLICY}: it ${unmet.join(', ')}`)
    }
  }
  if ((env.ADMIN_EMAIL === undefined) !== (env.ADMIN_PASSWORD === undefined)) {
    const [missing, set] = env.ADMIN_EMAIL === undefined
      ? ['ADMIN_EMAIL', 'ADMIN_PASSWORD']
      : ['ADMIN_PASSWORD', 'ADMIN_EMAIL']
    problems.push(`${missing} is required when ${set} is set`)
  }

  const webauthnOrigins = readWebauthnOrigins(env.WEBAUTHN_ORIGINS, env.WEBAUTHN_RP_ID, problems)
  const trustProxy = readTrustProxy(env.TRUST_PROXY, problems, warnings)
  const oauth = readOAuth(present, problems)
  const oauthRedirectUrls = readRedirectUrls(env.OAUTH_REDIRECT_URLS, problems)
  const jwtSecret = env.JWT_SECRET ?? randomSecret()
  const jwt = readSigningKeys(env, jwtSecret, problems, warnings)
  const sealing = {
    keys: readSealingKeys(env, jwtSecret, jwt, problems),
    drawnAtStart: env.SEALING_KEY === undefined && env.JWT_SECRET === undefined
  }
  if (refusals.size > 0 || problems.length > 0) {
    throw new ConfigError([...refusals.values(), ...problems.filter((problem) => !followsFromRefusal(problem))])
  }

  if (env.SMTP_URL === undefined) {
    warnings.push('SMTP_URL is unset: e-mail messages (verification, password reset, notices) are written to the log, not sent')
  }
  if (env.JWT_SECRET === undefined) {
    warnings.push(generatedSecretWarning(env.JWT_ALGORITHM, env.REFRESH_RETRY_WINDOW_S, 'process'))
  }

  return {
    nodeEnv: env.NODE_ENV,
    port,
    host: env.HOST,
    database: parseDatabaseUrl(env.DATABASE_URL),
    redisUrl: env.REDIS_URL ?? null,
    jwtSecret,
    jwt,
    sealing,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, ''),
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
    collectionCountLimit: Number(env.COLLECTION_COUNT_LIMIT),
    messages: {
      smtpUrl: env.SMTP_URL ?? null,
      from: env.MAIL_FROM,
      appUrl: env.APP_URL === undefined ? null : env.APP_URL.replace(/\/+$/, ''),
      emailVerification: env.EMAIL_VERIFICATION,
      emailSignIn: env.EMAIL_SIGN_IN,
      smsWebhookUrl: env.SMS_WEBHOOK_URL ?? null,
      retryMs: Number(env.MAIL_RETRY_MS)
    },
    passwordBreachCheck: { mode: env.PASSWORD_BREACH_CHECK, apiUrl: env.PASSWORD_BREACH_API_URL },
    ssoMetadataAllowedNetworks: ssoMetadataNetworks,
    webhooks: {
      allowedNetworks: webhookNetworks,
      timeoutMs: Number(env.WEBHOOK_TIMEOUT_MS),
      retentionDays: Number(env.WEBHOOK_DELIVERY_RETENTION_DAYS)
    },
    accountDeletionGraceDays: Number(env.ACCOUNT_DELETION_GRACE_DAYS),
    authorizationServerScopes: env.AUTHORIZATION_SERVER_SCOPES.split(',').filter((scope) => scope !== ''),
    authorizationServerRegistrationToken: env.AUTHORIZATION_SERVER_REGISTRATION_TOKEN ?? null,
    auditStream: { kind: env.AUDIT_STREAM, file: env.AUDIT_STREAM_FILE ?? null },
    logLevel: env.LOG_LEVEL,
    warnings
  }
}

/**
 * The authorization server's issuer (docs/api.md, "Authorization server"): JWT_ISSUER when it is
 * an http(s) URL, without a trailing slash; null when the server is off.
 */
export function authorizationServerIssuer (config: Pick<Config, 'jwt'>): string | null {
  const issuer = config.jwt.issuer
  return issuer !== null && isHttpBase(issuer) ? issuer.replace(/\/+$/, '') : null
}
