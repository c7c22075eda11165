import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ConfigError, loadConfig, sharedSigningVariables } from '../../src/config/index.js'
import { generateKeyPair } from '../../src/security/signing-keys.js'

function problemsOf (env: Record<string, string>): string[] {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.problems
    throw error
  }
  return []
}

const OIDC_CONFIG = { clientId: 'client', clientSecret: 'secret', redirectUri: 'https://api.example.com/api/v1/auth/oauth/x/callback' }
const OIDC_CLIENT = (name: string) => ({
  [`OAUTH_${name}_CLIENT_ID`]: OIDC_CONFIG.clientId,
  [`OAUTH_${name}_CLIENT_SECRET`]: OIDC_CONFIG.clientSecret,
  [`OAUTH_${name}_REDIRECT_URI`]: OIDC_CONFIG.redirectUri
})

t.test('nothing is needed to start: every default of the configuration', async (t) => {
  const config = loadConfig({})
  t.equal(config.port, 3000)
  t.equal(config.host, '127.0.0.1')
  t.same(config.database, { dialect: 'sqlite', url: 'sqlite://./data/app.db', path: './data/app.db' })
  t.equal(config.redisUrl, null)
  t.ok(config.jwtSecret.length >= 32, 'a random secret of at least 32 characters')
  t.not(loadConfig({}).jwtSecret, config.jwtSecret, 'generated per start')
  t.equal(config.corsOrigins, null)
  t.equal(config.trustProxy, false)
  t.same(config.rateLimit, { max: 100, windowMs: 60000, authMax: 10, adminMax: 5 })
  t.equal(config.admin, null)
  t.same(config.mfa, { issuer: 'Users API', requiredRoles: ['admin', 'super_admin'] })
  t.same(config.webauthn, { rpId: 'localhost', rpName: 'Users API', origins: ['http://localhost:3000'] })
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

t.test('passkey settings: the RP name follows MFA_ISSUER; origins must be origins on the RP ID', async (t) => {
  t.same(loadConfig({ MFA_ISSUER: 'Acme', WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com:8443' }).webauthn,
    { rpId: 'example.com', rpName: 'Acme', origins: ['https://example.com', 'https://app.example.com:8443'] })
  t.equal(loadConfig({ MFA_ISSUER: 'Acme', WEBAUTHN_RP_NAME: 'Acme Sign-in' }).webauthn.rpName, 'Acme Sign-in')
  t.same(problemsOf({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://evil.example,https://example.com/login,ftp://example.com,https://notexample.com' }), [
    'WEBAUTHN_ORIGINS has an origin outside WEBAUTHN_RP_ID example.com: https://evil.example',
    'WEBAUTHN_ORIGINS has an entry that is not an origin like https://example.com: https://example.com/login',
    'WEBAUTHN_ORIGINS has an entry that is not an origin like https://example.com: ftp://example.com',
    'WEBAUTHN_ORIGINS has an origin outside WEBAUTHN_RP_ID example.com: https://notexample.com'
  ])
  t.match(problemsOf({ WEBAUTHN_RP_ID: 'https://example.com' }), [/^WEBAUTHN_RP_ID must be a lower-case domain name/])
  t.same(problemsOf({ WEBAUTHN_ORIGINS: ' , ' }), ['WEBAUTHN_ORIGINS must list at least one origin'])
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
    ADMIN_PASSWORD: 'Long-enough-1!',
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
  t.equal(config.jwtSecret, 'x'.repeat(32))
  t.same(config.corsOrigins, ['https://a.example', 'https://b.example'])
  t.same(config.trustProxy, ['127.0.0.1', '10.0.0.0/8'])
  t.equal(config.rateLimit.authMax, 3)
  t.same(config.admin, { email: 'root@example.com', password: 'Long-enough-1!' })
  t.same(config.mfa.requiredRoles, ['moderator'])
  t.equal(config.passwordPolicy, 'strong')
  t.equal(config.zeroTrustMode, 'enforce')
  t.same(config.trustedNetworks, ['fd00::/8', '192.168.0.0/16'])
  t.same(config.oauth.github?.scopes, ['read:user', 'user:email', 'repo'])
  t.match(config.oauth.github, { issuer: null, tokenUrl: 'http://127.0.0.1:9999/token' })
  t.match(config.oauth.github, { authUrl: 'https://github.com/login/oauth/authorize' }, 'public endpoint by default')
  t.equal(config.oauth.google, undefined, 'a provider without client id is disabled')
  t.same(loadConfig({ DATABASE_URL: 'sqlite://:memory:' }).database, { dialect: 'sqlite', url: 'sqlite://:memory:', path: ':memory:' })
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
  t.equal(loadConfig({ REFRESH_RETRY_WINDOW_S: '0' }).session.refreshRetryWindowS, 0, '0 turns refresh retries off')
  t.equal(loadConfig({}).collectionCountLimit, 1000, 'filtered collections count up to 1,000 matches by default')
  t.equal(loadConfig({ COLLECTION_COUNT_LIMIT: '100' }).collectionCountLimit, 100)
  t.equal(loadConfig({ COLLECTION_COUNT_LIMIT: '10000' }).collectionCountLimit, 10_000)
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
    [{ COLLECTION_COUNT_LIMIT: '99' }, /^COLLECTION_COUNT_LIMIT must be a whole number from 100 to 10000 \(got "99"\)/],
    [{ COLLECTION_COUNT_LIMIT: '10001' }, /^COLLECTION_COUNT_LIMIT must be a whole number from 100 to 10000/],
    [{ COLLECTION_COUNT_LIMIT: '1e3' }, /^COLLECTION_COUNT_LIMIT must be a whole number from 100 to 10000/],
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
    [{ PASSWORD_POLICY: 'strong', ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'long-enough' }, /^ADMIN_PASSWORD is refused by PASSWORD_POLICY=strong: it must be at least 12 characters long, must contain an uppercase letter, must contain a digit$/],
    [{ NODE_ENV: 'production' }, /^CORS_ORIGINS must be set when NODE_ENV=production/],
    [{ OAUTH_GOOGLE_CLIENT_ID: 'id', OAUTH_GOOGLE_CLIENT_SECRET: 's' }, /^OAUTH_GOOGLE_REDIRECT_URI is required when OAuth provider google is enabled/],
    [{ OAUTH_GOOGLE_CLIENT_ID: 'id', OAUTH_GOOGLE_CLIENT_SECRET: 's', OAUTH_GOOGLE_REDIRECT_URI: 'x' }, /^OAUTH_GOOGLE_REDIRECT_URI must be an http\(s\) URL/],
    [{ OAUTH_PROVIDERS: 'keycloak', ...OIDC_CLIENT('KEYCLOAK') }, /^OAUTH_KEYCLOAK_ISSUER is required: keycloak is not a built-in provider/],
    [{ OAUTH_PROVIDERS: 'keycloak', ...OIDC_CLIENT('KEYCLOAK'), OAUTH_KEYCLOAK_ISSUER: 'https://id.example.com/realms/a?x=1' }, /^OAUTH_KEYCLOAK_ISSUER must be an http\(s\) URL without query or fragment/],
    [{ OAUTH_PROVIDERS: 'key-cloak' }, /^OAUTH_PROVIDERS names must be a letter then up to 31 letters, digits or underscores \(got "key-cloak"\)/],
    [{ OAUTH_PROVIDERS: 'okta', ...OIDC_CLIENT('OKTA'), OAUTH_OKTA_CLIENT_ID: '', OAUTH_OKTA_ISSUER: 'https://example.okta.com' }, /^OAUTH_OKTA_CLIENT_ID is required when OAuth provider okta is enabled/],
    [{ OAUTH_REDIRECT_URLS: 'https://app.example.com,/relative' }, /^OAUTH_REDIRECT_URLS must be a comma-separated list of http\(s\) URLs/]
  ]
  for (const [env, expected] of cases) {
    const problems = problemsOf(env)
    t.equal(problems.length, 1, `exactly one problem for ${JSON.stringify(env)}: ${problems.join('; ')}`)
    t.match(problems[0] ?? '', expected)
  }
})

t.test('providers by issuer: OAUTH_PROVIDERS names them, scopes default to openid email profile; redirect URLs end at a path boundary', async (t) => {
  const config = loadConfig({
    OAUTH_PROVIDERS: 'Keycloak,github',
    ...OIDC_CLIENT('KEYCLOAK'),
    OAUTH_KEYCLOAK_ISSUER: 'https://id.example.com/realms/staff',
    ...OIDC_CLIENT('GITHUB'),
    OAUTH_GOOGLE_CLIENT_ID: 'not listed, not enabled',
    OAUTH_REDIRECT_URLS: 'https://app.example.com, https://example.org/spa/'
  })
  t.same(Object.keys(config.oauth).sort(), ['github', 'keycloak'])
  t.same(config.oauth.keycloak, { ...OIDC_CONFIG, scopes: ['openid', 'email', 'profile'], issuer: 'https://id.example.com/realms/staff' })
  t.match(config.oauth.github, { issuer: null, scopes: ['read:user', 'user:email'] })
  t.same(config.oauthRedirectUrls, ['https://app.example.com/', 'https://example.org/spa/'])
  t.equal(loadConfig({}).oauthRedirectUrls, null, 'unset: browser applications are refused')
  const google = loadConfig(OIDC_CLIENT('GOOGLE')).oauth.google
  t.match(google, { issuer: 'https://accounts.google.com', scopes: ['openid', 'email', 'profile'] }, 'Google is discovered from its issuer')
  t.match(loadConfig({ ...OIDC_CLIENT('GOOGLE'), OAUTH_GOOGLE_AUTH_URL: 'http://127.0.0.1:9/authorize' }).oauth.google, { issuer: null }, 'unless its endpoints are overridden')
  t.match(loadConfig(OIDC_CLIENT('MICROSOFT')).oauth.microsoft, { issuer: null }, 'Microsoft\'s common endpoint has no single issuer')
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
  t.same(problemsOf({ JWT_SECRET: 'short', PORT: '99999' }), ['JWT_SECRET must be at least 32 characters long', 'PORT must be at most 65535 (got "99999")'],
    'a value the schema refuses does not hide the later checks')
  t.same(problemsOf({ JWT_ALGORITHM: 'HS512', TRUSTED_NETWORKS: 'banana', REFRESH_RETRY_WINDOW_S: '901' }), [
    'JWT_ALGORITHM must be one of HS256, EdDSA, ES256, RS256 (got "HS512")',
    'REFRESH_RETRY_WINDOW_S must be at most 900, the access token\'s lifetime (got "901")',
    'TRUSTED_NETWORKS has malformed CIDRs: banana'
  ])
  t.same(problemsOf({ ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: 'short', WEBAUTHN_RP_ID: 'Example.com', WEBAUTHN_ORIGINS: 'https://example.com' }), [
    'ADMIN_PASSWORD must be 8 to 128 characters long',
    'WEBAUTHN_RP_ID must be a lower-case domain name (got "Example.com")'
  ], 'what follows from a refused value (ADMIN_PASSWORD missing, origins outside the default RP ID) is not reported again')
})

t.test('the cluster\'s primary generates the signing material the configuration leaves unset, once for every worker', async (t) => {
  const issuer = { JWT_ISSUER: 'https://auth.example.com' }
  const hs = sharedSigningVariables({})
  t.same(Object.keys(hs.variables), ['JWT_SECRET'])
  t.same(loadConfig(hs.variables).jwt.current.kid, loadConfig(hs.variables).jwt.current.kid, 'every worker signs with the same secret')
  t.same(loadConfig(hs.variables).warnings.filter((warning) => /^JWT_/.test(warning)), [], 'the workers do not warn of a secret of their own')
  t.match(hs.warnings, [/^JWT_SECRET is unset: one random secret was generated for every worker, so tokens, cursors and MFA enrolments do not survive a restart; other instances do not accept these tokens, nor answer refresh retries of their rotations/])

  const ed = sharedSigningVariables({ JWT_ALGORITHM: 'EdDSA', ...issuer })
  t.same(Object.keys(ed.variables).sort(), ['JWT_PRIVATE_KEY', 'JWT_SECRET'])
  const worker = () => loadConfig({ JWT_ALGORITHM: 'EdDSA', ...issuer, ...ed.variables })
  t.equal(worker().jwt.current.kid, worker().jwt.current.kid, 'every worker signs with the same key pair')
  t.equal(worker().jwt.current.algorithm, 'EdDSA')
  t.match(ed.warnings, [/^JWT_SECRET is unset: one random secret/, /^JWT_PRIVATE_KEY is unset: one EdDSA key pair was generated for every worker/])

  t.same(sharedSigningVariables({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY_FILE: '/etc/key.pem' }), { variables: {}, warnings: [] }, 'nothing when both are configured')
  t.same(Object.keys(sharedSigningVariables({ JWT_SECRET: '', JWT_ALGORITHM: 'HS256' }).variables), ['JWT_SECRET'], 'empty counts as unset')
  t.same(sharedSigningVariables({ JWT_ALGORITHM: 'HS512' }), { variables: {}, warnings: [] }, 'a bad JWT_ALGORITHM is left to the workers\' check')
})

t.test('empty variables count as unset', async (t) => {
  t.equal(loadConfig({ PORT: '', REDIS_URL: '' }).port, 3000)
  t.equal(loadConfig({ REDIS_URL: '' }).redisUrl, null)
})

t.test('signing keys: the algorithm\'s key, its kid, previous keys and the issuer', async (t) => {
  const ed = generateKeyPair('EdDSA')
  const es = generateKeyPair('ES256')
  const defaults = loadConfig({ JWT_SECRET: 'x'.repeat(32) })
  t.equal(defaults.jwt.current.algorithm, 'HS256')
  t.equal(defaults.jwt.signingKey, 'x'.repeat(32), 'HS256 signs with JWT_SECRET')
  t.equal(defaults.jwt.current.jwk, null, 'a secret is never published')
  t.equal(defaults.jwt.issuer, null)
  t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).jwt.current.kid, defaults.jwt.current.kid, 'the kid is stable for a key')

  const config = loadConfig({
    JWT_SECRET: 'x'.repeat(32),
    JWT_ALGORITHM: 'EdDSA',
    JWT_PRIVATE_KEY: ed.privateKey,
    JWT_PREVIOUS_KEYS: `${es.publicKey}\n${'p'.repeat(40)}`,
    JWT_ISSUER: 'https://auth.example.com'
  })
  t.equal(config.jwt.current.algorithm, 'EdDSA')
  t.equal(config.jwt.current.jwk?.kid, config.jwt.current.kid)
  t.same(config.jwt.previous.map((key) => key.algorithm), ['ES256', 'HS256'])
  t.equal(config.jwt.issuer, 'https://auth.example.com')
  t.equal(config.jwtSecret, 'x'.repeat(32), 'JWT_SECRET still keys cursors and MFA secrets')
  t.notMatch(config.warnings.join('\n'), /JWT_PRIVATE_KEY/)

  const issuer = { JWT_ISSUER: 'https://auth.example.com' }
  const oneLine = loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed.privateKey.replace(/\n/g, '\\n'), ...issuer })
  t.equal(oneLine.jwt.current.kid, config.jwt.current.kid, 'a PEM written on one line with \\n escapes')

  const dir = mkdtempSync(join(tmpdir(), 'users-api-keys-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'key.pem'), ed.privateKey)
  t.equal(loadConfig({ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: join(dir, 'key.pem'), ...issuer }).jwt.current.kid, config.jwt.current.kid, 'from JWT_PRIVATE_KEY_FILE')

  for (const algorithm of ['EdDSA', 'ES256', 'RS256']) {
    const generated = loadConfig({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHM: algorithm, ...issuer })
    t.equal(generated.jwt.current.algorithm, algorithm, `${algorithm}: a key pair is generated when unset`)
    t.match(generated.warnings.join('\n'), /JWT_PRIVATE_KEY is unset: a .* key pair was generated/)
  }
  t.match(loadConfig({ JWT_ALGORITHM: 'EdDSA', ...issuer }).warnings.join('\n'), /JWT_SECRET is unset: .*cursors and MFA enrolments/, 'JWT_SECRET is still wanted under EdDSA')
})

t.test('a signing secret drawn at start-up is said to break tokens and, with retries on, refresh retries across instances', async (t) => {
  const warningOf = (env: Record<string, string>, variable: string) => loadConfig({ JWT_ISSUER: 'https://auth.example.com', ...env }).warnings.find((warning) => warning.startsWith(`${variable} is unset`)) ?? ''
  t.match(warningOf({}, 'JWT_SECRET'), /instances do not accept each other's tokens, nor answer refresh retries of each other's rotations/, 'HS256')
  t.match(warningOf({ JWT_ALGORITHM: 'ES256' }, 'JWT_PRIVATE_KEY'), /instances do not accept each other's tokens, nor answer refresh retries/, 'a generated key pair')
  t.notMatch(warningOf({ JWT_ALGORITHM: 'ES256' }, 'JWT_SECRET'), /refresh retries/, 'under ES256 the secret seals no kept pair')
  t.notMatch(warningOf({ REFRESH_RETRY_WINDOW_S: '0' }, 'JWT_SECRET'), /refresh retries/, 'retries off: not mentioned')
  t.match(warningOf({ REFRESH_RETRY_WINDOW_S: '0' }, 'JWT_SECRET'), /instances do not accept each other's tokens$/)
  t.same(loadConfig({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: generateKeyPair('EdDSA').privateKey, JWT_ISSUER: 'https://auth.example.com' }).warnings.filter((warning) => /JWT_/.test(warning)), [], 'none when both are set')
})

t.test('JWT_ISSUER is any name or URI (a JWT StringOrURI), kept as written', async (t) => {
  for (const issuer of ['users-api', 'urn:example:users', 'https://auth.example.com', 'https://auth.example.com/tenants/a?x=1', 'Ünïcode-Issuer', 'a'.repeat(2048)]) {
    t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32), JWT_ISSUER: issuer }).jwt.issuer, issuer, `accepted: ${issuer.slice(0, 40)}`)
  }
  t.match(problemsOf({ JWT_SECRET: 'x'.repeat(32), JWT_ISSUER: 'a'.repeat(2049) }), [/^JWT_ISSUER must be/], 'at most 2048 characters')
  t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32), JWT_ISSUER: '' }).jwt.issuer, null, 'empty is unset')
})

t.test('JWT_ISSUER is required with EdDSA, ES256 and RS256: discovery must not take its issuer from the Host header', async (t) => {
  for (const algorithm of ['EdDSA', 'ES256', 'RS256'] as const) {
    const key = generateKeyPair(algorithm).privateKey
    for (const unset of [{}, { JWT_ISSUER: '' }] as Array<Record<string, string>>) {
      t.same(problemsOf({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: key, ...unset }),
        [`JWT_ISSUER is required when JWT_ALGORITHM is ${algorithm}: other services verify its tokens, and without it the discovery document would take its issuer from the Host header of each request`],
        `${algorithm}: refused to start${'JWT_ISSUER' in unset ? ' (empty is unset)' : ''}`)
    }
    t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32), JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: key, JWT_ISSUER: 'urn:example:users' }).jwt.issuer, 'urn:example:users', `${algorithm}: any issuer will do`)
  }
  t.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).jwt.issuer, null, 'HS256 starts without one')
})

t.test('a bad signing key stops start-up with a message naming the variable', async (t) => {
  const ed = generateKeyPair('EdDSA')
  const es = generateKeyPair('ES256')
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 })
  const shortRsaPrivate = rsa1024.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const shortRsaPublic = rsa1024.publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ JWT_ALGORITHM: 'HS512' }, /^JWT_ALGORITHM must be one of HS256, EdDSA, ES256, RS256/],
    [{ JWT_ALGORITHM: 'none' }, /^JWT_ALGORITHM must be one of/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed.publicKey }, /^JWT_PRIVATE_KEY is a public key; the private key is needed to sign/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: 'not a key' }, /^JWT_PRIVATE_KEY is not a PEM private key/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: es.privateKey }, /^JWT_PRIVATE_KEY is a key for ES256, not for JWT_ALGORITHM EdDSA/],
    [{ JWT_ALGORITHM: 'RS256', JWT_PRIVATE_KEY: ed.privateKey }, /^JWT_PRIVATE_KEY is a key for EdDSA, not for JWT_ALGORITHM RS256/],
    [{ JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: p384 }, /^JWT_PRIVATE_KEY is an EC key on secp384r1; ES256 needs P-256/],
    [{ JWT_ALGORITHM: 'RS256', JWT_PRIVATE_KEY: shortRsaPrivate }, /^JWT_PRIVATE_KEY is a 1024-bit RSA key; at least 2048 bits are required/],
    [{ JWT_PRIVATE_KEY: ed.privateKey }, /^JWT_PRIVATE_KEY is only used with JWT_ALGORITHM EdDSA, ES256 or RS256/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed.privateKey, JWT_PRIVATE_KEY_FILE: '/etc/key.pem' }, /^JWT_PRIVATE_KEY and JWT_PRIVATE_KEY_FILE must not both be set/],
    [{ JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY_FILE: '/nonexistent/key.pem' }, /^JWT_PRIVATE_KEY_FILE must name a readable file \(ENOENT/],
    [{ JWT_PREVIOUS_KEYS: ed.privateKey }, /^JWT_PREVIOUS_KEYS entry 1 is a PRIVATE KEY; only public keys/],
    [{ JWT_PREVIOUS_KEYS: shortRsaPublic }, /^JWT_PREVIOUS_KEYS entry 1 is a 1024-bit RSA key/],
    [{ JWT_PREVIOUS_KEYS: `${es.publicKey}short-secret` }, /^JWT_PREVIOUS_KEYS entry 2 is a secret shorter than 32 characters/],
    [{ JWT_PREVIOUS_KEYS: '-----BEGIN PUBLIC KEY-----\nMCow' }, /^JWT_PREVIOUS_KEYS entry 1 is an incomplete PEM block/],
    [{ JWT_PREVIOUS_KEYS: '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----' }, /^JWT_PREVIOUS_KEYS entry 1 is not a readable PEM public key/],
    [{ JWT_ISSUER: 'auth service' }, /^JWT_ISSUER must be a name or URI without white space or control characters \(got "auth service"\)/],
    [{ JWT_ISSUER: 'auth\u0007service' }, /^JWT_ISSUER must be a name or URI without white space or control characters/],
    [{ JWT_ISSUER: 'auth\u0085service' }, /^JWT_ISSUER must be a name or URI without white space or control characters/],
    [{ JWT_ISSUER: 'https://auth.example.com/\t' }, /^JWT_ISSUER must be a name or URI without white space or control characters/],
    [{ JWT_ISSUER: '1.2.3.4:8080' }, /^JWT_ISSUER contains ":" but is not a URI \(got "1.2.3.4:8080"\)/],
    [{ JWT_ISSUER: ':users' }, /^JWT_ISSUER contains ":" but is not a URI/],
    [{ JWT_ISSUER: 'https://[::1' }, /^JWT_ISSUER contains ":" but is not a URI/]
  ]
  for (const [env, expected] of cases) {
    const problems = problemsOf({ JWT_SECRET: 'x'.repeat(32), JWT_ISSUER: 'https://auth.example.com', ...env })
    t.equal(problems.length, 1, `exactly one problem for ${Object.keys(env).join(', ')}: ${problems.join('; ')}`)
    t.match(problems[0] ?? '', expected)
    t.notMatch(problems[0] ?? '', /BEGIN|MC4CAQ|MIG/, 'no key material in the message')
  }
})

t.test('PASSWORD_BREACH_CHECK: off by default, warned of in production, and its API URL checked', async (t) => {
  const base = { JWT_SECRET: 'x'.repeat(32), CORS_ORIGINS: 'https://app.example.com', NODE_ENV: 'production' }
  t.same(loadConfig({}).passwordBreachCheck, { mode: 'off', apiUrl: 'https://api.pwnedpasswords.com' })
  t.match(loadConfig(base).warnings.join('\n'), /PASSWORD_BREACH_CHECK is off/)
  t.notMatch(loadConfig({ ...base, PASSWORD_BREACH_CHECK: 'block' }).warnings.join('\n'), /PASSWORD_BREACH_CHECK/)
  t.throws(() => loadConfig({ PASSWORD_BREACH_CHECK: 'maybe' }), /PASSWORD_BREACH_CHECK must be one of off, warn, block/)
  t.throws(() => loadConfig({ PASSWORD_BREACH_API_URL: 'ftp://mirror.example.com' }), /PASSWORD_BREACH_API_URL must be an http\(s\) URL/)
})
