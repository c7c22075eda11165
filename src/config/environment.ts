import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { COUNT_LIMITS } from '../collection/query.js'
import { JWT_ALGORITHMS } from '../security/signing-keys.js'
import { shown } from './problems.js'

/**
 * The variables (docs/operations.md, "All variables"): each one's rule and default, and the
 * first check of the environment against them.
 */

/** Each rule's `description` completes the sentence "<VARIABLE> must be …". */
const positiveInteger = (fallback: string) =>
  Type.String({ default: fallback, pattern: '^[1-9][0-9]{0,9}$', description: 'a positive integer' })
const commaList = (fallback?: string) =>
  Type.String({ default: fallback, pattern: '^[^,]*(,[^,]*)*$', description: 'a comma-separated list' })
const oneOf = <const T extends string>(values: readonly T[], fallback: T) =>
  Type.Union(
    values.map((value) => Type.Literal(value)),
    { default: fallback, description: `one of ${values.join(', ')}` }
  )

export const EnvSchema = Type.Object({
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
  SEALING_KEY: Type.Optional(Type.String({ minLength: 32, description: 'at least 32 characters long' })),
  SEALING_PREVIOUS_KEYS: Type.Optional(Type.String()),
  JWT_ALGORITHM: oneOf(JWT_ALGORITHMS, 'HS256'),
  JWT_PRIVATE_KEY: Type.Optional(Type.String()),
  JWT_PRIVATE_KEY_FILE: Type.Optional(Type.String()),
  JWT_PREVIOUS_KEYS: Type.Optional(Type.String()),
  JWT_ISSUER: Type.Optional(Type.String({
    maxLength: 2048,
    pattern: '^[^\\s\\u0000-\\u001f\\u007f-\\u009f]+$',
    description: 'a name or URI without white space or control characters'
  })),
  CORS_ORIGINS: Type.Optional(commaList()),
  TRUST_PROXY: Type.String({ default: 'false' }),
  RATE_LIMIT_MAX: positiveInteger('100'),
  RATE_LIMIT_WINDOW_MS: positiveInteger('60000'),
  RATE_LIMIT_AUTH_MAX: positiveInteger('10'),
  RATE_LIMIT_ADMIN_MAX: positiveInteger('5'),
  ADMIN_EMAIL: Type.Optional(Type.String({
    maxLength: 254,
    pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$',
    description: 'an e-mail address'
  })),
  ADMIN_PASSWORD: Type.Optional(Type.String({ minLength: 8, maxLength: 128, description: '8 to 128 characters long' })),
  MFA_ISSUER: Type.String({ default: 'Users API', maxLength: 100, description: 'at most 100 characters long' }),
  MFA_REQUIRED_ROLES: commaList('admin,super_admin'),
  WEBAUTHN_RP_ID: Type.String({
    default: 'localhost',
    maxLength: 253,
    pattern: '^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$',
    description: 'a lower-case domain name'
  }),
  WEBAUTHN_RP_NAME: Type.Optional(Type.String({ maxLength: 100, description: 'at most 100 characters long' })),
  WEBAUTHN_ORIGINS: commaList('http://localhost:3000'),
  SESSION_IDLE_TIMEOUT_S: positiveInteger('1800'),
  SESSION_ABSOLUTE_TIMEOUT_S: positiveInteger('28800'),
  SESSION_MAX_CONCURRENT: positiveInteger('3'),
  REFRESH_RETRY_WINDOW_S: Type.String({
    default: '10',
    pattern: '^[0-9]{1,10}$',
    description: 'a whole number of seconds'
  }),
  PASSWORD_POLICY: oneOf(['basic', 'strong'], 'basic'),
  TRUSTED_NETWORKS: commaList('192.168.1.0/24,10.0.0.0/8,172.16.0.0/12'),
  ZERO_TRUST_MODE: oneOf(['off', 'monitor', 'enforce'], 'monitor'),
  AUDIT_RETENTION_DAYS: positiveInteger('90'),
  COLLECTION_COUNT_LIMIT: Type.String({
    default: String(COUNT_LIMITS.default),
    pattern: '^([1-9][0-9]{2,3}|10000)$',
    description: `a whole number from ${COUNT_LIMITS.min} to ${COUNT_LIMITS.max}`
  }),
  OAUTH_PROVIDERS: Type.Optional(commaList()),
  OAUTH_REDIRECT_URLS: Type.Optional(commaList()),
  SMTP_URL: Type.Optional(Type.String({ pattern: '^smtps?://\\S+$', description: 'an smtp:// or smtps:// URL' })),
  MAIL_FROM: Type.String({
    default: 'Users API <no-reply@localhost>',
    maxLength: 320,
    pattern: '^[^\\r\\n<>]*<?[^\\s@<>]+@[^\\s@<>]+>?$',
    description: 'a sender address, optionally with a name (Name <address>)'
  }),
  APP_URL: Type.Optional(Type.String({ pattern: '^https?://\\S+$', description: 'an http(s) URL' })),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://\\S+$', description: 'an http(s) URL' })),
  EMAIL_VERIFICATION: oneOf(['off', 'optional', 'required'], 'optional'),
  EMAIL_SIGN_IN: oneOf(['off', 'existing', 'on'], 'on'),
  SMS_WEBHOOK_URL: Type.Optional(Type.String({ pattern: '^https?://\\S+$', description: 'an http(s) URL' })),
  MAIL_RETRY_MS: positiveInteger('5000'),
  PASSWORD_BREACH_CHECK: oneOf(['off', 'warn', 'block'], 'off'),
  PASSWORD_BREACH_API_URL: Type.String({
    default: 'https://api.pwnedpasswords.com', pattern: '^https?://[^\\s]+$', description: 'an http(s) URL'
  }),
  WEBHOOK_ALLOWED_NETWORKS: commaList(''),
  SSO_METADATA_ALLOWED_NETWORKS: commaList(''),
  WEBHOOK_TIMEOUT_MS: positiveInteger('10000'),
  WEBHOOK_DELIVERY_RETENTION_DAYS: positiveInteger('30'),
  AUTHORIZATION_SERVER_SCOPES: Type.String({
    default: '',
    pattern: '^([a-z][a-z0-9_.:-]{0,63}(,[a-z][a-z0-9_.:-]{0,63})*)?$',
    description: 'a comma-separated list of scopes (lower-case letters, digits, _ . : -)'
  }),
  AUTHORIZATION_SERVER_REGISTRATION_TOKEN: Type.Optional(Type.String({
    minLength: 32, maxLength: 512, pattern: '^[\\x21-\\x7e]+$', description: 'at least 32 printable characters without spaces'
  })),
  ACCOUNT_DELETION_GRACE_DAYS: Type.String({ default: '0', pattern: '^(0|[1-9][0-9]{0,3})$', description: 'a whole number of days, 0 to 9999' }),
  AUDIT_STREAM: oneOf(['off', 'stdout', 'file', 'webhooks'], 'off'),
  AUDIT_STREAM_FILE: Type.Optional(Type.String({ minLength: 1, description: 'a file path' })),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info')
})
export type Env = Static<typeof EnvSchema>

/** The environment checked against the rules. */
export interface Environment {
  /** The variables set, as given: empty ones count as unset, as most deployment tools write them. */
  present: Record<string, string | undefined>
  /** Every variable but the refused ones, which read as if unset, with its default. */
  env: Env
  /** Each refused variable's problem, by its name. */
  refusals: Map<string, string>
}

/**
 * Checks the variables against their rules. The checks that follow run on `env`, a refused
 * variable as if unset, so every problem is reported at once.
 */
export function readEnvironment (source: Record<string, string | undefined>): Environment {
  const present = Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined && value !== ''))
  const read = Value.Default(EnvSchema, Value.Clean(EnvSchema, { ...present })) as Record<string, unknown>
  const refusals = new Map([...Value.Errors(EnvSchema, read)].map((error) => {
    const name = error.path.slice(1)
    const rule = String(error.schema.description ?? error.message)
    return [name, `${name} must be ${rule}${shown(name, error.value)}`] as const
  }))
  const env = Value.Default(
    EnvSchema,
    Object.fromEntries(Object.entries(read).filter(([name]) => !refusals.has(name)))
  ) as Env
  return { present, env, refusals }
}

/** A comma-separated variable's entries, trimmed, empty ones left out. */
export function list (value: string | undefined): string[] {
  return (value ?? '').split(',').map((item) => item.trim()).filter((item) => item.length > 0)
}
