import { constants, createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { TokenService } from '../../../src/security/tokens.js'
import { claimsOf, createAccount, signIn, withToken } from '../../helpers/accounts.js'
import { TEST_SECRET, build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl } from '../../helpers/database.js'

type Refusal = 'MISSING_TOKEN' | 'INVALID_TOKEN' | 'TOKEN_EXPIRED'

const MESSAGES: Record<Refusal | 'SESSION_EXPIRED' | 'FORBIDDEN', string> = {
  MISSING_TOKEN: 'Missing token',
  INVALID_TOKEN: 'Invalid token',
  TOKEN_EXPIRED: 'Invalid token',
  SESSION_EXPIRED: 'Session expired',
  FORBIDDEN: 'Permission denied. Requires: manage_users'
}

/** Text a refusal must never carry: the signing secret, key material, stacks, library internals. */
const LEAK = new RegExp([
  TEST_SECRET, 'BEGIN [A-Z ]*KEY', 'stack', 'node_modules', '\\.[cm]?[jt]s:\\d+', 'FAST_JWT', 'TokenError', 'sqlite', 'postgres'
].join('|'), 'i')

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
const ed = generateKeyPairSync('ed25519')
const rsaPublicPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString()
const ecPublicPem = ec.publicKey.export({ type: 'spki', format: 'pem' }).toString()

type Signer = (input: string) => Buffer

const hmac = (key: string, hash = 'sha256'): Signer => (input) => createHmac(hash, key).update(input).digest()
const unsigned: Signer = () => Buffer.alloc(0)
const rs256: Signer = (input) => sign('sha256', Buffer.from(input), rsa.privateKey)
const ps256: Signer = (input) => sign('sha256', Buffer.from(input), { key: rsa.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 })
const es256: Signer = (input) => sign('sha256', Buffer.from(input), { key: ec.privateKey, dsaEncoding: 'ieee-p1363' })
const eddsa: Signer = (input) => sign(null, Buffer.from(input), ed.privateKey)

const HS256 = { alg: 'HS256', typ: 'JWT' }

/** A base64url segment: objects as JSON, strings as the raw text (to send JSON that is not an object, or no JSON). */
function segment (part: object | string): string {
  return Buffer.from(typeof part === 'string' ? part : JSON.stringify(part)).toString('base64url')
}

function jwt (header: object | string, payload: object | string, signer: Signer): string {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${signer(input).toString('base64url')}`
}

/** The claims the service puts in an access token; `undefined` overrides leave a claim out. */
function accessClaims (sub: unknown, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000)
  return { sub, roles: ['user'], type: 'access', jti: randomBytes(16).toString('base64url'), iat: now, exp: now + 900, ...overrides }
}

/** The token with its payload replaced and the original signature kept. */
function withPayload (token: string, payload: Record<string, unknown>): string {
  const [header, , signature] = token.split('.')
  return `${header ?? ''}.${segment(payload)}.${signature ?? ''}`
}

/** The token with its header replaced and the original signature kept. */
function withHeader (token: string, header: Record<string, unknown>): string {
  const [, payload, signature] = token.split('.')
  return `${segment(header)}.${payload ?? ''}.${signature ?? ''}`
}

interface Tally { attacks: number, requests: number }
const tallies = new Map<string, Tally>()

/**
 * One attack (a request, or the same credential on several routes): each response must be
 * the documented refusal, exactly, with nothing else in the body.
 */
function refused (
  t: Test,
  tally: Tally,
  label: string,
  responses: LightMyRequestResponse[],
  expected: { status?: number, code: Refusal | 'SESSION_EXPIRED' | 'FORBIDDEN', challenge?: boolean }
): void {
  const { status = 401, code, challenge = true } = expected
  for (const response of responses) {
    t.equal(response.statusCode, status, `${label}: ${status}`)
    t.same(response.json(), { error: { code, message: MESSAGES[code] } }, `${label}: ${code}`)
    if (challenge) t.equal(response.headers['www-authenticate'], 'Bearer', `${label}: WWW-Authenticate`)
    t.notMatch(response.body, LEAK, `${label}: nothing leaked`)
    tally.requests++
  }
  tally.attacks++
}

interface Attack {
  name: string
  /** Request headers carrying (or failing to carry) the credential. */
  headers: Record<string, string>
  /** Query string added to the URL. */
  query?: string
  code: Refusal
}

for (const backend of backends()) {
  const tally: Tally = { attacks: 0, requests: 0 }
  tallies.set(backend.name, tally)

  t.test(backend.name, async (t) => {
    const app = await build(t, { postgresUrl: backend.url })

    t.test('forged, tampered, misplaced and malformed tokens are refused on every kind of protected route', async (t) => {
      const attacker = await createAccount(app)
      const admin = await createAccount(app, { roles: ['admin'] })
      const victim = await createAccount(app)
      const { access_token: valid, refresh_token: refreshToken } = await signIn(app, attacker)
      const validClaims = claimsOf(valid)
      const [validHeader, validPayload, validSignature] = valid.split('.') as [string, string, string]
      const minted = new TokenService({ secret: TEST_SECRET })
      const past = new TokenService({ secret: TEST_SECRET, now: () => Date.now() - 16 * 60 * 1000 })
      const now = Math.floor(Date.now() / 1000)
      const escalated = { ...validClaims, roles: ['super_admin'] }

      // The forging code is sound: the right key and claims make a token the service accepts.
      const control = jwt(HS256, accessClaims(attacker.id), hmac(TEST_SECRET))
      t.equal((await app.inject(withToken(control, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200, 'a token forged with the secret is accepted')

      const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
      const attacks: Attack[] = [
        // Unsigned tokens.
        ...['none', 'None', 'NONE', 'nOnE'].map((alg): Attack => ({
          name: `alg ${alg}, empty signature`, headers: bearer(jwt({ alg, typ: 'JWT' }, escalated, unsigned)), code: 'INVALID_TOKEN'
        })),
        { name: 'alg none, the original signature kept', headers: bearer(`${segment({ alg: 'none' })}.${validPayload}.${validSignature}`), code: 'INVALID_TOKEN' },
        { name: 'alg none, no signature part', headers: bearer(`${segment({ alg: 'none' })}.${validPayload}`), code: 'INVALID_TOKEN' },
        { name: 'HS256 header, signature stripped', headers: bearer(`${validHeader}.${validPayload}.`), code: 'INVALID_TOKEN' },
        // Other algorithms and keys: asymmetric tokens signed with freshly generated key pairs.
        { name: 'RS256, fresh RSA key', headers: bearer(jwt({ alg: 'RS256', typ: 'JWT' }, escalated, rs256)), code: 'INVALID_TOKEN' },
        { name: 'RS256 with the attacker\'s key embedded as jwk', headers: bearer(jwt({ alg: 'RS256', typ: 'JWT', jwk: rsa.publicKey.export({ format: 'jwk' }) }, escalated, rs256)), code: 'INVALID_TOKEN' },
        { name: 'RS256 with a jku to fetch keys from', headers: bearer(jwt({ alg: 'RS256', typ: 'JWT', jku: 'http://127.0.0.1:9/jwks.json' }, escalated, rs256)), code: 'INVALID_TOKEN' },
        { name: 'PS256, fresh RSA key', headers: bearer(jwt({ alg: 'PS256', typ: 'JWT' }, escalated, ps256)), code: 'INVALID_TOKEN' },
        { name: 'ES256, fresh P-256 key', headers: bearer(jwt({ alg: 'ES256', typ: 'JWT' }, escalated, es256)), code: 'INVALID_TOKEN' },
        { name: 'EdDSA, fresh Ed25519 key', headers: bearer(jwt({ alg: 'EdDSA', typ: 'JWT' }, escalated, eddsa)), code: 'INVALID_TOKEN' },
        // Algorithm confusion: a public key used as the HMAC secret.
        { name: 'HS256 keyed with an RSA public key PEM', headers: bearer(jwt(HS256, escalated, hmac(rsaPublicPem))), code: 'INVALID_TOKEN' },
        { name: 'HS256 keyed with an EC public key PEM', headers: bearer(jwt(HS256, escalated, hmac(ecPublicPem))), code: 'INVALID_TOKEN' },
        // Only HS256, even with the right secret.
        { name: 'HS384 with the right secret', headers: bearer(jwt({ alg: 'HS384', typ: 'JWT' }, validClaims, hmac(TEST_SECRET, 'sha384'))), code: 'INVALID_TOKEN' },
        { name: 'HS512 with the right secret', headers: bearer(jwt({ alg: 'HS512', typ: 'JWT' }, validClaims, hmac(TEST_SECRET, 'sha512'))), code: 'INVALID_TOKEN' },
        { name: 'alg hs256 (lower case) with the right secret', headers: bearer(jwt({ alg: 'hs256', typ: 'JWT' }, validClaims, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'no alg, HMAC with the right secret', headers: bearer(jwt({ typ: 'JWT' }, validClaims, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        // Key identifiers the service does not have: there is one key, and kid selects nothing.
        { name: 'unknown kid, another secret', headers: bearer(jwt({ ...HS256, kid: 'attacker-key-1' }, escalated, hmac('attacker-secret-attacker-secret-0001'))), code: 'INVALID_TOKEN' },
        { name: 'kid pointing at /dev/null, empty key', headers: bearer(jwt({ ...HS256, kid: '../../../../../../dev/null' }, escalated, hmac(''))), code: 'INVALID_TOKEN' },
        { name: 'kid with SQL injection selecting a known key', headers: bearer(jwt({ ...HS256, kid: '\' UNION SELECT \'attacker-key\' --' }, escalated, hmac('attacker-key'))), code: 'INVALID_TOKEN' },
        // Tampering with a genuine token.
        { name: 'sub changed to another user, signature kept', headers: bearer(withPayload(valid, { ...validClaims, sub: admin.id })), code: 'INVALID_TOKEN' },
        { name: 'roles raised to super_admin, signature kept', headers: bearer(withPayload(valid, escalated)), code: 'INVALID_TOKEN' },
        { name: 'exp pushed a year ahead, signature kept', headers: bearer(withPayload(valid, { ...validClaims, exp: now + 365 * 24 * 3600 })), code: 'INVALID_TOKEN' },
        { name: 'header changed, signature kept', headers: bearer(withHeader(valid, { ...HS256, kid: 'x' })), code: 'INVALID_TOKEN' },
        { name: 'signature taken from another genuine token', headers: bearer(`${validHeader}.${validPayload}.${(await signIn(app, admin)).access_token.split('.')[2] ?? ''}`), code: 'INVALID_TOKEN' },
        {
          // The first character carries whole signature bits (the last one may only hold padding bits).
          name: 'one signature character changed',
          headers: bearer(`${validHeader}.${validPayload}.${validSignature[0] === 'A' ? 'B' : 'A'}${validSignature.slice(1)}`),
          code: 'INVALID_TOKEN'
        },
        // Wrong secrets.
        { name: 'another secret', headers: bearer(jwt(HS256, validClaims, hmac('another-secret-of-at-least-32-characters'))), code: 'INVALID_TOKEN' },
        { name: 'an empty secret', headers: bearer(jwt(HS256, validClaims, hmac(''))), code: 'INVALID_TOKEN' },
        { name: 'the secret one character short', headers: bearer(jwt(HS256, validClaims, hmac(TEST_SECRET.slice(0, -1)))), code: 'INVALID_TOKEN' },
        // Time.
        { name: 'expired', headers: bearer(past.issueAccessToken({ sub: attacker.id, roles: ['user'] }).token), code: 'TOKEN_EXPIRED' },
        { name: 'expired and forged with another secret (no expiry oracle)', headers: bearer(jwt(HS256, accessClaims(attacker.id, { exp: now - 60 }), hmac('another-secret-of-at-least-32-characters'))), code: 'INVALID_TOKEN' },
        { name: 'not yet valid (nbf in an hour)', headers: bearer(jwt(HS256, accessClaims(attacker.id, { nbf: now + 3600 }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'exp as a string', headers: bearer(jwt(HS256, accessClaims(attacker.id, { exp: String(now + 900) }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        // Required claims, correctly signed.
        { name: 'no exp', headers: bearer(jwt(HS256, accessClaims(attacker.id, { exp: undefined }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'no sub', headers: bearer(jwt(HS256, accessClaims(undefined), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'no jti', headers: bearer(jwt(HS256, accessClaims(attacker.id, { jti: undefined }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'no type', headers: bearer(jwt(HS256, accessClaims(attacker.id, { type: undefined }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'sub as a number', headers: bearer(jwt(HS256, accessClaims(1.2345678901234567e19), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'jti as an object', headers: bearer(jwt(HS256, accessClaims(attacker.id, { jti: { $ne: null } }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        // Other kinds of token.
        { name: 'a refresh token', headers: bearer(refreshToken), code: 'INVALID_TOKEN' },
        { name: 'an mfa_token', headers: bearer(minted.issueMfaToken(attacker.id).token), code: 'INVALID_TOKEN' },
        // Size.
        { name: 'a 256 KB token', headers: bearer(jwt(HS256, { ...validClaims, pad: 'x'.repeat(256 * 1024) }, hmac('another-secret-of-at-least-32-characters'))), code: 'INVALID_TOKEN' },
        { name: 'a genuine token with 64 KB appended', headers: bearer(`${valid}${'A'.repeat(64 * 1024)}`), code: 'INVALID_TOKEN' },
        // Shape.
        { name: 'one part', headers: bearer('eyJhbGciOiJIUzI1NiJ9'), code: 'INVALID_TOKEN' },
        { name: 'two parts', headers: bearer(`${validHeader}.${validPayload}`), code: 'INVALID_TOKEN' },
        { name: 'four parts', headers: bearer(`${valid}.${validSignature}`), code: 'INVALID_TOKEN' },
        { name: 'five parts (JWE-shaped)', headers: bearer(`${segment({ alg: 'dir', enc: 'A256GCM' })}..${validPayload}.${validPayload}.${validSignature}`), code: 'INVALID_TOKEN' },
        { name: 'empty parts', headers: bearer('..'), code: 'INVALID_TOKEN' },
        { name: 'header not base64url', headers: bearer(`!!!*.${validPayload}.${validSignature}`), code: 'INVALID_TOKEN' },
        { name: 'payload not base64url', headers: bearer(`${validHeader}.%%%$.${validSignature}`), code: 'INVALID_TOKEN' },
        { name: 'header JSON that is an array', headers: bearer(jwt('["HS256"]', validClaims, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'header that is not JSON', headers: bearer(jwt('{alg:HS256', validClaims, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        ...['"a string"', '42', 'null', 'true', '[]', `[${JSON.stringify(validClaims)}]`].map((payload): Attack => ({
          name: `payload JSON ${payload.slice(0, 12)}, signed`, headers: bearer(jwt(HS256, payload, hmac(TEST_SECRET))), code: 'INVALID_TOKEN'
        })),
        { name: 'payload that is not JSON, signed', headers: bearer(jwt(HS256, 'sub=me', hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'payload with a duplicate sub, signed', headers: bearer(jwt(HS256, `{"sub":${JSON.stringify(attacker.id)},"roles":[],"type":"access","jti":"j","iat":${now},"exp":${now + 900},"sub":5}`, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'huge numbers (exp 1e400, a 400-digit iat), forged', headers: bearer(jwt(HS256, `{"sub":${JSON.stringify(attacker.id)},"type":"access","jti":"j","iat":${'9'.repeat(400)},"exp":1e400}`, hmac('another-secret-of-at-least-32-characters'))), code: 'INVALID_TOKEN' },
        // Even correctly signed, an expiry no date can hold would make a token that never expires.
        { name: 'exp 1e20 (past year 275760), signed', headers: bearer(jwt(HS256, accessClaims(attacker.id, { exp: 1e20 }), hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'exp 1e400 (Infinity), signed', headers: bearer(jwt(HS256, `{"sub":${JSON.stringify(attacker.id)},"roles":[],"type":"access","jti":"j","iat":${now},"exp":1e400}`, hmac(TEST_SECRET))), code: 'INVALID_TOKEN' },
        { name: 'control characters and NUL bytes', headers: bearer(`${validHeader}\u0000.${validPayload}.${validSignature}`), code: 'INVALID_TOKEN' },
        // The scheme: the header must start with exactly `Bearer `.
        { name: 'scheme in lower case', headers: { authorization: `bearer ${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'scheme in upper case', headers: { authorization: `BEARER ${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'Basic credentials', headers: { authorization: `Basic ${Buffer.from(`${attacker.email}:${attacker.password}`).toString('base64')}` }, code: 'MISSING_TOKEN' },
        { name: 'Token scheme', headers: { authorization: `Token ${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'JWT scheme', headers: { authorization: `JWT ${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'no scheme', headers: { authorization: valid }, code: 'MISSING_TOKEN' },
        { name: 'Bearer without a space', headers: { authorization: `Bearer${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'Bearer and a tab', headers: { authorization: `Bearer\t${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'Bearer alone', headers: { authorization: 'Bearer' }, code: 'MISSING_TOKEN' },
        { name: 'empty header', headers: { authorization: '' }, code: 'MISSING_TOKEN' },
        { name: 'Bearer and nothing', headers: { authorization: 'Bearer ' }, code: 'INVALID_TOKEN' },
        { name: 'Bearer and only spaces', headers: { authorization: 'Bearer      ' }, code: 'INVALID_TOKEN' },
        { name: 'two tokens after Bearer', headers: { authorization: `Bearer ${valid} ${valid}` }, code: 'INVALID_TOKEN' },
        { name: 'two Bearer credentials in one header', headers: { authorization: `Bearer ${valid}, Bearer ${valid}` }, code: 'INVALID_TOKEN' },
        { name: 'token in a query parameter', headers: {}, query: `access_token=${valid}`, code: 'MISSING_TOKEN' },
        { name: 'token in a cookie', headers: { cookie: `token=${valid}; access_token=${valid}` }, code: 'MISSING_TOKEN' },
        { name: 'token in X-Access-Token', headers: { 'x-access-token': valid }, code: 'MISSING_TOKEN' }
      ]

      const routes: Array<{ label: string, options: InjectOptions, optional: boolean }> = [
        { label: 'GET /auth/me', options: { method: 'GET', url: '/api/v1/auth/me' }, optional: false },
        { label: 'DELETE /users/{id}', options: { method: 'DELETE', url: `/api/v1/users/${victim.id}` }, optional: false },
        { label: 'POST /auth/logout', options: { method: 'POST', url: '/api/v1/auth/logout' }, optional: false },
        { label: 'GET /posts (token optional)', options: { method: 'GET', url: '/api/v1/posts' }, optional: true }
      ]
      for (const attack of attacks) {
        const responses: LightMyRequestResponse[] = []
        for (const route of routes) {
          // A route that also serves anonymous callers answers those without a bearer credential
          // as anonymous; one that is sent must be good.
          if (route.optional && attack.code === 'MISSING_TOKEN') continue
          const url = attack.query === undefined ? route.options.url as string : `${route.options.url as string}?${attack.query}`
          responses.push(await app.inject({ ...route.options, url, headers: attack.headers }))
        }
        refused(t, tally, attack.name, responses, { code: attack.code })
      }

      // Correctly signed by the service, but the roles claim is not what grants anything:
      // roles are read from the store.
      const claimsAdmin = minted.issueAccessToken({ sub: attacker.id, roles: ['super_admin'] }).token
      refused(t, tally, 'a genuine token claiming super_admin', [
        await app.inject(withToken(claimsAdmin, { method: 'DELETE', url: `/api/v1/users/${victim.id}` }))
      ], { status: 403, code: 'FORBIDDEN', challenge: false })

      const survivor = await app.inject(withToken(admin.token, { method: 'GET', url: `/api/v1/users/${victim.id}` }))
      t.equal(survivor.statusCode, 200, 'the victim of every forged DELETE still exists')
      t.equal((await app.inject(withToken(valid, { method: 'GET', url: '/api/v1/auth/me' }))).json().data.id, attacker.id,
        'the genuine token still works after the attacks')
    })

    t.test('each kind of token is good only where it belongs', async (t) => {
      const account = await createAccount(app)
      const pair = await signIn(app, account)
      const minted = new TokenService({ secret: TEST_SECRET })
      const mfaToken = minted.issueMfaToken(account.id).token
      const refreshWith = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: token } })
      const verifyWith = (token: string) => app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: token, code: '123456' } })
      const refreshClaims = claimsOf(pair.refresh_token)

      const onRefresh: Array<[string, string, Refusal | 'SESSION_EXPIRED']> = [
        ['an access token as a refresh token', pair.access_token, 'INVALID_TOKEN'],
        ['an mfa_token as a refresh token', mfaToken, 'INVALID_TOKEN'],
        ['a refresh token signed with another secret', jwt(HS256, refreshClaims, hmac('another-secret-of-at-least-32-characters')), 'INVALID_TOKEN'],
        ['an unsigned refresh token', jwt({ alg: 'none', typ: 'JWT' }, refreshClaims, unsigned), 'INVALID_TOKEN'],
        ['an RS256 refresh token', jwt({ alg: 'RS256', typ: 'JWT' }, refreshClaims, rs256), 'INVALID_TOKEN'],
        ['a refresh token whose sub was changed', withPayload(pair.refresh_token, { ...refreshClaims, sub: '0190a6b0-0000-7000-8000-000000000000' }), 'INVALID_TOKEN'],
        ['a correctly signed refresh token the service never issued', minted.issueRefreshToken(account.id).token, 'INVALID_TOKEN'],
        ['an expired refresh token', jwt(HS256, { ...refreshClaims, exp: Math.floor(Date.now() / 1000) - 1 }, hmac(TEST_SECRET)), 'SESSION_EXPIRED'],
        ['garbage', 'x.y.z', 'INVALID_TOKEN']
      ]
      for (const [label, token, code] of onRefresh) {
        refused(t, tally, label, [await refreshWith(token)], { code, challenge: false })
      }

      const onVerify: Array<[string, string]> = [
        ['an access token as an mfa_token', pair.access_token],
        ['a refresh token as an mfa_token', pair.refresh_token],
        ['an unsigned mfa_token', jwt({ alg: 'none', typ: 'JWT' }, claimsOf(mfaToken), unsigned)]
      ]
      for (const [label, token] of onVerify) {
        refused(t, tally, label, [await verifyWith(token)], { code: 'INVALID_TOKEN', challenge: false })
      }
      t.equal((await refreshWith(pair.refresh_token)).statusCode, 200, 'the genuine refresh token was not spent by the attempts')
    })

    t.test('a deleted user\'s tokens are refused, even after the e-mail is registered again', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const account = await createAccount(app)
      const pair = await signIn(app, account)
      const challenge = new TokenService({ secret: TEST_SECRET }).issueMfaToken(account.id).token
      const me = (token: string) => app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal((await me(pair.access_token)).statusCode, 200)
      t.equal((await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${account.id}` }))).statusCode, 204)
      refused(t, tally, 'the access token of a deleted user', [
        await me(pair.access_token),
        await app.inject(withToken(account.token, { method: 'GET', url: `/api/v1/users/${admin.id}` }))
      ], { code: 'INVALID_TOKEN' })
      refused(t, tally, 'the refresh token of a deleted user', [
        await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: pair.refresh_token } })
      ], { code: 'INVALID_TOKEN', challenge: false })
      refused(t, tally, 'the mfa_token of a deleted user', [
        await app.inject({ method: 'POST', url: '/api/v1/auth/mfa/verify', payload: { mfa_token: challenge, code: '123456' } })
      ], { code: 'INVALID_TOKEN', challenge: false })

      const again = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: account.email, name: 'Same Address', password: account.password } })
      t.equal(again.statusCode, 201)
      t.not(again.json().data.id, account.id)
      refused(t, tally, 'the old token after the address is registered again', [await me(pair.access_token)], { code: 'INVALID_TOKEN' })
    })

    t.test('a revoked token stays refused after a restart, with its session', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const before = await build(t, { databaseUrl })
      const account = await createAccount(before)
      const pair = await signIn(before, account)
      t.equal((await before.inject(withToken(pair.access_token, { method: 'POST', url: '/api/v1/auth/logout' }))).statusCode, 204)
      await before.close()

      const after = await build(t, { databaseUrl })
      refused(t, tally, 'a revoked access token after a restart', [
        await after.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/auth/me' })),
        await after.inject(withToken(pair.access_token, { method: 'POST', url: '/api/v1/auth/logout' }))
      ], { code: 'INVALID_TOKEN' })
      refused(t, tally, 'the logged-out session\'s refresh token after a restart', [
        await after.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: pair.refresh_token } })
      ], { code: 'INVALID_TOKEN', challenge: false })
      t.equal((await after.inject(withToken(account.token, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200,
        'a token that was not revoked still works after the restart')
    })
  })
}

interface RawResponse { status: number, headers: Record<string, string | string[] | undefined>, body: string }

/** A GET over a real connection (inject has no header size limit; Node's HTTP parser does). */
async function get (address: AddressInfo, path: string, headers: Record<string, string>): Promise<RawResponse> {
  return await new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: '127.0.0.1', port: address.port, path, headers, agent: false }, (incoming) => {
      const chunks: Buffer[] = []
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks).toString() }))
      incoming.on('error', reject)
    })
    outgoing.on('error', reject)
    outgoing.end()
  })
}

t.test('oversized Authorization headers on a listening server', async (t) => {
  const tally: Tally = { attacks: 0, requests: 0 }
  tallies.set('listening server', tally)
  const app = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address() as AddressInfo
  const account = await createAccount(app)
  const forged = (size: number) => jwt(HS256, { ...accessClaims(account.id), pad: 'x'.repeat(size) }, hmac('another-secret-of-at-least-32-characters'))

  // Under Node's 16 KiB header limit the service itself answers.
  const underLimit = await get(address, '/api/v1/auth/me', { authorization: `Bearer ${forged(10 * 1024)}` })
  t.equal(underLimit.status, 401)
  t.same(JSON.parse(underLimit.body), { error: { code: 'INVALID_TOKEN', message: 'Invalid token' } })
  t.equal(underLimit.headers['www-authenticate'], 'Bearer')
  t.equal(underLimit.headers['x-content-type-options'], 'nosniff', 'with the security headers')
  tally.attacks++
  tally.requests++

  // Over it, Node's parser stops the request before Fastify routes it: the client-error
  // handler answers 431 and closes the connection. No route, hook or verifier runs.
  for (const size of [17 * 1024, 1024 * 1024]) {
    const overLimit = await get(address, '/api/v1/auth/me', { authorization: `Bearer ${forged(size)}` })
    t.equal(overLimit.status, 431, `${size} bytes: 431`)
    t.same(JSON.parse(overLimit.body), { error: { code: 'HEADERS_TOO_LARGE', message: 'Request headers too large' } })
    t.notMatch(overLimit.body, LEAK, 'nothing leaked')
    t.notMatch(overLimit.body, /eyJ/, 'the token is not echoed')
    tally.attacks++
    tally.requests++
  }

  const health = await get(address, '/health', {})
  t.equal(health.status, 200, 'the server still serves after the oversized requests')
  const me = await get(address, '/api/v1/auth/me', { authorization: `Bearer ${account.token}` })
  t.equal(me.status, 200, 'and authenticates genuine tokens')
})

t.teardown(() => {
  let attacks = 0
  let requests = 0
  for (const [where, tally] of tallies) {
    t.comment(`token attacks refused (${where}): ${tally.attacks} attacks, ${tally.requests} requests`)
    attacks += tally.attacks
    requests += tally.requests
  }
  t.comment(`token attacks refused: ${attacks} (${requests} requests)`)
})
