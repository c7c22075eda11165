import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { generateKeyPair } from '../../src/security/signing-keys.js'
import { TEST_PASSWORD, uniqueEmail } from '../helpers/accounts.js'
import { msUntil } from '../helpers/clock.js'
import type { TestContext } from '../helpers/context.js'
import { backends, freshDatabaseUrl, REDIS_ENV, suiteName } from '../helpers/database.js'
import { callService, type ServiceProcess, startService } from '../helpers/process.js'

const run = promisify(execFile)

/**
 * A resource server in its own process, as another team would write one: jose's
 * createRemoteJWKSet against our JWKS, EdDSA only, nothing else shared with the service.
 * Prints each token's outcome: its `sub` and `kid`, or jose's error code.
 */
const VERIFIER = `
import { createRemoteJWKSet, jwtVerify } from 'jose'
const [jwksUrl, ...tokens] = process.argv.slice(1)
const keys = createRemoteJWKSet(new URL(jwksUrl))
const results = []
for (const token of tokens) {
  try {
    const { payload, protectedHeader } = await jwtVerify(token, keys, { algorithms: ['EdDSA'] })
    results.push({ ok: true, sub: payload.sub, kid: protectedHeader.kid })
  } catch (error) {
    results.push({ ok: false, code: error.code })
  }
}
process.stdout.write(JSON.stringify(results))
`

type Outcome = { ok: true, sub: string, kid: string } | { ok: false, code: string }

async function verifyElsewhere (service: ServiceProcess, ...tokens: string[]): Promise<Outcome[]> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', VERIFIER, `${service.base}/.well-known/jwks.json`, ...tokens], { cwd: process.cwd() })
  return JSON.parse(stdout)
}

const kidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()).kid

async function signIn (
  service: ServiceProcess,
  email: string
): Promise<{ access_token: string, refresh_token: string }> {
  const response = await callService(service, 'POST', '/api/v1/auth/login', { body: { email, password: TEST_PASSWORD } })
  if (response.status !== 200) throw new Error(JSON.stringify(response.body))
  return response.body.data
}

async function start (t: TestContext, databaseUrl: string, env: Record<string, string>): Promise<ServiceProcess> {
  return await startService(t, { DATABASE_URL: databaseUrl, MFA_REQUIRED_ROLES: 'none', RATE_LIMIT_MAX: '100000', RATE_LIMIT_AUTH_MAX: '1000', JWT_ALGORITHM: 'EdDSA', JWT_ISSUER: 'https://users.example.com', ...env })
}

async function stop (service: ServiceProcess): Promise<void> {
  service.child.kill('SIGTERM')
  await service.exited
}

/** Every test runs on each backend, and with Redis when one is given: revocations then travel through it. */
for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    t.test('another service verifies our EdDSA tokens from the JWKS; it cannot see a revocation, our instances can', async (t) => {
      const key = generateKeyPair('EdDSA')
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const service = await start(t, databaseUrl, { ...REDIS_ENV, JWT_PRIVATE_KEY: key.privateKey })
      const other = await start(t, databaseUrl, { ...REDIS_ENV, JWT_PRIVATE_KEY: key.privateKey })
      const email = uniqueEmail()
      const created = await callService(service, 'POST', '/api/v1/users', { body: { email, name: 'Resource Reader', password: TEST_PASSWORD } })
      t.equal(created.status, 201)
      const { access_token: token } = await signIn(service, email)

      const [verified] = await verifyElsewhere(service, token)
      t.same(verified, { ok: true, sub: created.body.data.id, kid: kidOf(token) }, 'verified with nothing but the JWKS')

      t.equal((await callService(other, 'GET', '/api/v1/auth/me', { token })).status, 200, 'our other instance accepts it')
      t.equal((await callService(service, 'POST', '/api/v1/auth/logout', { token })).status, 204)
      const refused = await callService(service, 'GET', '/api/v1/auth/me', { token })
      t.equal(refused.status, 401)
      t.equal(refused.body.error.code, 'INVALID_TOKEN', 'our API refuses the revoked token')
      const elapsed = await msUntil(async () => (await callService(other, 'GET', '/api/v1/auth/me', { token })).status === 401, 2000)
      t.ok(elapsed <= 1000, `so does our other instance, after ${elapsed} ms${REDIS_ENV.REDIS_URL === undefined ? '' : ' (told through Redis)'}`)
      const [stillValid] = await verifyElsewhere(service, token)
      t.equal(stillValid?.ok, true, 'local verification cannot know of the revocation: the token is good until it expires (15 minutes at most)')

      const forged = `${token.split('.').slice(0, 2).join('.')}.${Buffer.alloc(64).toString('base64url')}`
      const [bad] = await verifyElsewhere(service, forged)
      t.same(bad, { ok: false, code: 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' }, 'a forged signature fails there too')
    })

    t.test('rotation: key A, then key B with A still accepted, then B alone', async (t) => {
      const url = await freshDatabaseUrl(t, backend.url, { shared: true })
      const a = generateKeyPair('EdDSA')
      const b = generateKeyPair('EdDSA')

      const first = await start(t, url, { ...REDIS_ENV, JWT_PRIVATE_KEY: a.privateKey })
      const email = uniqueEmail()
      t.equal((await callService(first, 'POST', '/api/v1/users', { body: { email, name: 'Rotating Reader', password: TEST_PASSWORD } })).status, 201)
      const old = await signIn(first, email)
      const kidA = kidOf(old.access_token)
      await stop(first)

      const second = await start(t, url, {
        ...REDIS_ENV, JWT_PRIVATE_KEY: b.privateKey, JWT_PREVIOUS_KEYS: a.publicKey
      })
      const fresh = await signIn(second, email)
      const kidB = kidOf(fresh.access_token)
      t.not(kidB, kidA, 'new tokens carry B\'s kid')
      t.same((await callService(second, 'GET', '/.well-known/jwks.json')).body.keys.map((jwk: { kid: string }) => jwk.kid), [kidB, kidA], 'the JWKS lists B, then A')
      t.equal((await callService(second, 'GET', '/api/v1/auth/me', { token: old.access_token })).status, 200, 'A\'s access token is still accepted')
      t.same((await verifyElsewhere(second, old.access_token, fresh.access_token)).map((outcome) => outcome.ok), [true, true], 'and verifies elsewhere, as B\'s does')
      const refreshed = await callService(second, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: old.refresh_token } })
      t.equal(refreshed.status, 200, 'A\'s refresh token still refreshes')
      t.equal(kidOf(refreshed.body.data.access_token), kidB, 'into tokens signed with B')
      await stop(second)

      const third = await start(t, url, { ...REDIS_ENV, JWT_PRIVATE_KEY: b.privateKey })
      const refused = await callService(third, 'GET', '/api/v1/auth/me', { token: old.access_token })
      t.equal(refused.status, 401)
      t.equal(refused.body.error.code, 'INVALID_TOKEN', 'A\'s tokens are refused once A is removed')
      t.equal((await callService(third, 'GET', '/api/v1/auth/me', { token: refreshed.body.data.access_token })).status, 200, 'B\'s are not')
      t.same(await verifyElsewhere(third, old.access_token), [{ ok: false, code: 'ERR_JWKS_NO_MATCHING_KEY' }], 'nor verify elsewhere')
    })
  })
}
