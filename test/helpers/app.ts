/** The app for `app.inject`: built as the server builds it, with the test configuration. */
import { BlockList, isIP } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../src/config/index.js'
import { createInstance } from '../../src/http/instance.js'
import type { TxtResolver } from '../../src/services/organizations/txt-records.js'
import type { Resolver } from '../../src/security/outbound-http.js'
import type { TestContext } from './context.js'
import { freshDatabaseUrl } from './database.js'

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

export const TEST_SECRET = 'test-secret-that-is-at-least-32-characters'

/**
 * The security headers, exactly, on every response, errors, 404s, 429s and preflights included (docs/api.md,
 * "Security headers").
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-xss-protection': '1; mode=block',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': "default-src 'self';frame-ancestors 'none';script-src 'self' 'unsafe-inline';style-src 'self' 'unsafe-inline';img-src 'self' data: https:",
  // Added to the set: tokens and personal data must not be cached.
  'cache-control': 'no-store'
}

/**
 * Tests reach no address but loopback: webhook endpoints' host names (and addresses) resolve
 * only when they are loopback ones, so a test that stores a public URL sends nothing anywhere.
 */
export const loopbackResolver: Resolver = async (hostname) => {
  const address = hostname === 'localhost' ? '127.0.0.1' : hostname
  if (isIP(address) !== 0 && LOOPBACK.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')) {
    return [{ address, family: isIP(address) }]
  }
  throw Object.assign(new Error(`tests resolve loopback only, not ${hostname}`), { code: 'ENOTFOUND' })
}

/**
 * Tests look up TXT records only on a DNS server of their own (test/helpers/servers/dns-server.ts):
 * unless a test gives one, every lookup fails as a name server that cannot answer would.
 */
export const noTxtRecords: TxtResolver = async (name) => {
  throw Object.assign(new Error(`tests look up TXT records on their own DNS server only, not ${name}`), { code: 'ESERVFAIL' })
}

export interface BuildOptions {
  /** PostgreSQL URL to isolate a schema in, or null for in-memory SQLite. */
  postgresUrl?: string | null
  /** Extra environment variables, as the service would read them. */
  env?: Record<string, string>
  /** Use this database URL as is (to share one database between two instances). */
  databaseUrl?: string
  /** Adds test-only routes before the app is ready. */
  extend?: (app: FastifyInstance) => void
  /** PBKDF2 rounds of new password hashes: TEST_PASSWORD_ROUNDS unless given (PBKDF2_ROUNDS for the real cost). */
  passwordRounds?: number
  /** Told every statement the database runs (statementsOf, test/helpers/statements.ts). */
  onStatement?: (sql: string) => void
  /** Where TXT records are looked up (a test's own DNS server); none are found unless given. */
  resolveTxt?: TxtResolver
}

/**
 * The rounds passwords are hashed with in apps built for tests: their subject is the rules, not
 * the hash's cost, which most of their time went to at the real one (docs/testing.md). A hash
 * names its rounds, so stored hashes of either cost verify.
 */
export const TEST_PASSWORD_ROUNDS = 1000

/** Builds the app as the server does, ready for `app.inject`, closed at teardown. */
export async function build (t: TestContext, options: BuildOptions = {}): Promise<FastifyInstance> {
  const databaseUrl = options.databaseUrl ?? await freshDatabaseUrl(t, options.postgresUrl ?? null)
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    JWT_SECRET: TEST_SECRET,
    LOG_LEVEL: 'silent',
    CORS_ORIGINS: 'http://localhost:3000',
    // Tests of other features sign in far more often than a client may; the rate-limit
    // tests set their own limits.
    RATE_LIMIT_MAX: '1000000',
    RATE_LIMIT_AUTH_MAX: '1000000',
    RATE_LIMIT_ADMIN_MAX: '1000000',
    // Admin accounts in tests of other features are not enrolled in MFA; the MFA tests
    // set the roles that must use it.
    MFA_REQUIRED_ROLES: 'none',
    ...options.env
  })
  const passwordRounds = options.passwordRounds ?? TEST_PASSWORD_ROUNDS
  const { onStatement, resolveTxt = noTxtRecords } = options
  const app = createInstance(config, undefined, { resolve: loopbackResolver, resolveTxt, passwordRounds, onStatement })
  options.extend?.(app)
  t.teardown(async () => await app.close())
  await app.ready()
  return app
}

/** Resolves once every app's Redis connection is ready (Redis calls do not queue while it connects). */
export async function redisReady (...apps: FastifyInstance[]): Promise<void> {
  for (const app of apps) {
    const redis = app.redis
    if (redis !== null && redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
  }
}
