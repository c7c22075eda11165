import t from 'tap'
import { ConfigError, loadConfig } from '../src/config.js'

function problemsOf (env: Record<string, string>): string[] {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  return []
}

t.test('nothing is needed to start: every default of the configuration', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 3000)
  t.equal(config.host, '127.0.0.1')
  t.same(config.database, { dialect: 'sqlite', url: 'sqlite://./data/app.db', path: './data/app.db' })
  t.equal(config.redisUrl, null)
  t.equal(config.jwtSecretGenerated, true)
  t.ok(config.jwtSecret.length >= 32, 'a random secret of at least 32 characters')
  t.not(loadConfig({}).jwtSecret, config.jwtSecret, 'generated per start')
  t.equal(config.corsOrigins, null)
  t.equal(config.trustProxy, false)
  t.same(config.rateLimit, { max: 100, windowMs: 60000, authMax: 10, adminMax: 5 })
  t.equal(config.admin, null)
  t.same(config.mfa, { issuer: 'Users API', requiredRoles: ['admin', 'super_admin'] })
  t.same(config.session, { idleTimeoutS: 1800, absoluteTimeoutS: 28800, maxConcurrent: 3, refreshRetryWindowS: 10 })
  t.equal(config.passwordPolicy, 'basic')
  t.same(config.oauth, {})
  t.same(config.trustedNetworks, ['192.168.1.0/24', '10.0.0.0/8', '172.16.0.0/12'])
  t.equal(config.zeroTrustMode, 'monitor')
  t.equal(config.auditRetentionDays, 90)
  t.equal(config.logLevel, 'info')
  t.match(config.warnings.join('\n'), /CORS_ORIGINS/)
  t.match(config.warnings.join('\n'), /JWT_SECRET/)
})

t.test('values are read and typed', async (t) => {
  const config = loadConfig({
    PORT: '8080',
    DATABASE_URL: 'postgres://u@127.0.0.1/db',
    REDIS_URL: 'redis://127.0.0.1:6379',
    JWT_SECRET: 'x'.repeat(32),
    CORS_ORIGINS: 'https://a.example, https://b.example',
    TRUST_PROXY: '127.0.0.1,10.0.0.0/8',
    RATE_LIMIT_AUTH_MAX: '3',
    ADMIN_EMAIL: 'root@example.com',
    ADMIN_PASSWORD: 'long-enough',
    MFA_REQUIRED_ROLES: 'moderator',
    PASSWORD_POLICY: 'strong',
    ZERO_TRUST_MODE: 'enforce',
    TRUSTED_NETWORKS: 'fd00::/8,192.168.0.0/16',
    OAUTH_GITHUB_CLIENT_ID: 'id',
    OAUTH_GITHUB_CLIENT_SECRET: 'secret',
    OAUTH_GITHUB_REDIRECT_URI: 'http://127.0.0.1:3000/cb',
    OAUTH_GITHUB_TOKEN_URL: 'http://127.0.0.1:9999/token',
    OAUTH_GITHUB_SCOPES: 'read:user,user:email repo'
  })
  t.equal(config.port, 8080)
  t.same(config.database, { dialect: 'postgres', url: 'postgres://u@127.0.0.1/db' })
  t.equal(config.jwtSecretGenerated, false)
  t.same(config.corsOrigins, ['https://a.example', 'https://b.example'])
  t.same(config.trustProxy, ['127.0.0.1', '10.0.0.0/8'])
  t.equal(config.rateLimit.authMax, 3)
  t.same(config.admin, { email: 'root@example.com', password: 'long-enough' })
  t.same(config.mfa.requiredRoles, ['moderator'])
  t.equal(config.passwordPolicy, 'strong')
  t.equal(config.zeroTrustMode, 'enforce')
  t.same(config.trustedNetworks, ['fd00::/8', '192.168.0.0/16'])
  t.same(config.oauth.github?.scopes, ['read:user', 'user:email', 'repo'])
  t.equal(config.oauth.github?.tokenUrl, 'http://127.0.0.1:9999/token')
  t.equal(config.oauth.github?.authUrl, 'https://github.com/login/oauth/authorize', 'public endpoint by default')
  t.equal(config.oauth.google, undefined, 'a provider without client id is disabled')
  t.same(loadConfig({ DATABASE_URL: 'sqlite://:memory:' }).database, { dialect: 'sqlite', url: 'sqlite://:memory:', path: ':memory:' })
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
  t.equal(loadConfig({ REFRESH_RETRY_WINDOW_S: '0' }).session.refreshRetryWindowS, 0, '0 turns refresh retries off')
  t.match(loadConfig({ TRUST_PROXY: 'true' }).warnings.join(), /forge/)
})

t.test('a bad value stops start-up with a message naming the variable', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL must be a sqlite:\/\/, postgres:\/\/ or postgresql:\/\/ URL/],
    [{ RATE_LIMIT_MAX: 'abc' }, /^RATE_LIMIT_MAX must be a positive integer \(got "abc"\)/],
    [{ RATE_LIMIT_WINDOW_MS: '0' }, /^RATE_LIMIT_WINDOW_MS must be a positive integer/],
    [{ SESSION_MAX_CONCURRENT: '-1' }, /^SESSION_MAX_CONCURRENT must be a positive integer/],
    [{ REFRESH_RETRY_WINDOW_S: '-1' }, /^REFRESH_RETRY_WINDOW_S must be a whole number of seconds \(got "-1"\)/],
    [{ REFRESH_RETRY_WINDOW_S: '901' }, /^REFRESH_RETRY_WINDOW_S must be at most 900, the access token's lifetime/],
    [{ PORT: '70000' }, /^PORT must be at most 65535/],
    [{ PORT: 'http' }, /^PORT must be a port number/],
    [{ JWT_SECRET: 'short' }, /^JWT_SECRET must be at least 32 characters long/],
    [{ TRUSTED_NETWORKS: '10.0.0.0/33' }, /^TRUSTED_NETWORKS has malformed CIDRs: 10.0.0.0\/33/],
    [{ TRUSTED_NETWORKS: 'banana' }, /^TRUSTED_NETWORKS has malformed CIDRs: banana/],
    [{ TRUST_PROXY: 'sometimes' }, /^TRUST_PROXY must be true, false or a comma-separated list/],
    [{ ZERO_TRUST_MODE: 'strict' }, /^ZERO_TRUST_MODE must be one of off, monitor, enforce/],
    [{ PASSWORD_POLICY: 'weak' }, /^PASSWORD_POLICY must be one of basic, strong/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of/],
    [{ MFA_REQUIRED_ROLES: 'admin,root' }, /^MFA_REQUIRED_ROLES has unknown roles: root/],
    [{ REDIS_URL: 'http://x' }, /^REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
    [{ ADMIN_EMAIL: 'root@example.com' }, /^ADMIN_PASSWORD is required when ADMIN_EMAIL is set/],
    [{ ADMIN_EMAIL: 'not-an-email', ADMIN_PASSWORD: 'long-enough' }, /^ADMIN_EMAIL must be an e-mail address/],
    [{ NODE_ENV: 'production' }, /^CORS_ORIGINS must be set when NODE_ENV=production/],
    [{ OAUTH_GOOGLE_CLIENT_ID: 'id', OAUTH_GOOGLE_CLIENT_SECRET: 's' }, /^OAUTH_GOOGLE_REDIRECT_URI is required when OAUTH_GOOGLE_CLIENT_ID is set/],
    [{ OAUTH_GOOGLE_CLIENT_ID: 'id', OAUTH_GOOGLE_CLIENT_SECRET: 's', OAUTH_GOOGLE_REDIRECT_URI: 'x' }, /^OAUTH_GOOGLE_REDIRECT_URI must be an http\(s\) URL/]
  ]
  for (const [env, expected] of cases) {
    const problems = problemsOf(env)
    t.equal(problems.length, 1, `exactly one problem for ${JSON.stringify(env)}: ${problems.join('; ')}`)
    t.match(problems[0] ?? '', expected)
  }
})

t.test('refused secrets are not repeated in the message, nor a connection URL\'s password', async (t) => {
  const problems = problemsOf({
    JWT_SECRET: 'hunter2-short-secret',
    ADMIN_EMAIL: 'root@example.com',
    ADMIN_PASSWORD: 'short',
    DATABASE_URL: 'mysql://root:S3cretDbPass@db/app',
    REDIS_URL: 'http://:R3disPass@cache:6379'
  })
  t.equal(problems.length, 4, problems.join('; '))
  t.notMatch(problems.join('\n'), /hunter2|short"|S3cretDbPass|R3disPass/)
  t.match(problems.join('\n'), /mysql:\/\/root:\[REDACTED\]@db\/app/, 'the URL is shown without its password')
})

t.test('every problem is reported at once', async (t) => {
  const problems = problemsOf({ PORT: 'x', RATE_LIMIT_MAX: 'y' })
  t.equal(problems.length, 2)
  t.throws(() => loadConfig({ PORT: 'x' }), { name: 'ConfigError', message: /Invalid configuration:\n {2}- PORT/ })
})

t.test('empty variables count as unset', async (t) => {
  t.equal(loadConfig({ PORT: '', REDIS_URL: '' }).port, 3000)
  t.equal(loadConfig({ REDIS_URL: '' }).redisUrl, null)
})
