import { createHmac, createPrivateKey, randomBytes, sign } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { createLocalJWKSet, jwtVerify } from 'jose'
import t from 'tap'
import { buildOpenApiDocument } from '../../../src/cli/openapi-document.js'
import { type AsymmetricAlgorithm, generateKeyPair, type JwtAlgorithm, secretKey } from '../../../src/security/signing-keys.js'
import { claimsOf, createAccount, withToken } from '../../helpers/accounts.js'
import { TEST_SECRET, build } from '../../helpers/app.js'
import { sqliteFile } from '../../helpers/database.js'

type Signer = (input: string) => Buffer

/** A signer for `algorithm` under `key` (a secret, or a PEM private key), as any library would sign. */
function signerFor (algorithm: string, key: string): Signer {
  if (algorithm === 'HS256') return (input) => createHmac('sha256', key).update(input).digest()
  const privateKey = createPrivateKey(key)
  if (algorithm === 'EdDSA') return (input) => sign(null, Buffer.from(input), privateKey)
  if (algorithm === 'ES256') return (input) => sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
  return (input) => sign('sha256', Buffer.from(input), privateKey)
}

const segment = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')

function jwt (header: Record<string, unknown>, payload: Record<string, unknown>, signer: Signer): string {
  const input = `${segment(header)}.${segment(payload)}`
  return `${input}.${signer(input).toString('base64url')}`
}

function accessClaims (sub: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000)
  return { sub, roles: ['user'], type: 'access', jti: randomBytes(16).toString('base64url'), iat: now, exp: now + 900, ...overrides }
}

function headerOf (token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString())
}

const me = async (app: FastifyInstance, token: string) => await app.inject(withToken(token, { method: 'GET', url: '/api/v1/auth/me' }))

const ALGORITHMS: JwtAlgorithm[] = ['HS256', 'EdDSA', 'ES256', 'RS256']

for (const algorithm of ALGORITHMS) {
  t.test(`${algorithm}: tokens name their key, the JWKS publishes it, and attacks are refused`, async (t) => {
    const pair = algorithm === 'HS256' ? null : generateKeyPair(algorithm)
    const signingKey = pair?.privateKey ?? TEST_SECRET
    const issuer = 'https://auth.example.com'
    const app = await build(t, {
      env: { JWT_ALGORITHM: algorithm, ...(pair !== null && { JWT_PRIVATE_KEY: pair.privateKey }), JWT_ISSUER: issuer }
    })
    const { kid } = app.config.jwt.current
    const account = await createAccount(app)
    const header = headerOf(account.token)
    t.same(header, { alg: algorithm, typ: 'JWT', kid }, 'the header names the algorithm and the key')
    t.equal(claimsOf(account.token).iss, issuer, 'iss is JWT_ISSUER')

    const jwks = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    t.equal(jwks.statusCode, 200)
    t.equal(jwks.headers['cache-control'], 'public, max-age=300')
    t.equal(jwks.headers['x-content-type-options'], 'nosniff', 'with the security headers')
    const { keys } = jwks.json()
    if (algorithm === 'HS256') {
      t.same(keys, [], 'an HS256 secret is never published')
    } else {
      t.equal(keys.length, 1)
      t.match(keys[0], { kid, alg: algorithm, use: 'sig' })
      t.notOk('d' in keys[0], 'no private member')
      const { payload, protectedHeader } = await jwtVerify(
        account.token,
        createLocalJWKSet(jwks.json()),
        { issuer, algorithms: [algorithm] }
      )
      t.equal(payload.sub, account.id, 'a JWKS verifier accepts the token')
      t.equal(protectedHeader.kid, kid)
    }

    const discovery = await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })
    t.equal(discovery.statusCode, 200)
    t.equal(discovery.headers['cache-control'], 'public, max-age=300')
    // JWT_ISSUER an https URL: the authorization server's document, the service's members kept.
    t.match(discovery.json(), {
      issuer,
      jwks_uri: `${issuer}/oidc/jwks`,
      token_endpoint: `${issuer}/oidc/token`,
      login_endpoint: `${issuer}/api/v1/auth/login`,
      refresh_endpoint: `${issuer}/api/v1/auth/refresh`,
      logout_endpoint: `${issuer}/api/v1/auth/logout`
    })
    t.same(discovery.json().api_token_signing_alg_values_supported, [algorithm], 'the one algorithm the API\'s tokens use')
    t.same(discovery.json().id_token_signing_alg_values_supported, ['RS256', 'ES256', 'EdDSA'], 'ID tokens\' own, whatever the API signs with')
    const listed = await app.inject({ method: 'GET', url: '/oidc/jwks' })
    const apiKeys = jwks.json().keys as Array<{ kid: string }>
    t.ok(apiKeys.every((key) => listed.json().keys.some((each: { kid: string }) => each.kid === key.kid)), 'the discovery\'s JWKS holds the API\'s keys')

    const sub = account.id
    const ours = signerFor(algorithm, signingKey)
    const control = jwt({ alg: algorithm, typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), ours)
    t.equal((await me(app, control)).statusCode, 200, 'the forging code is sound: our key and claims are accepted')

    const attacker = generateKeyPair('EdDSA')
    const attackerKid = randomBytes(32).toString('base64url')
    const publicPem = pair?.publicKey ?? ''
    const attacks: Array<[string, string]> = [
      ['alg none under our kid', `${segment({ alg: 'none', typ: 'JWT', kid })}.${segment(accessClaims(sub, { iss: issuer }))}.`],
      ['a foreign kid, signed with its own key', jwt({ alg: 'EdDSA', typ: 'JWT', kid: attackerKid }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))],
      ['our kid, signed with a foreign key', jwt({ alg: 'EdDSA', typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))],
      ['a jku to fetch the foreign key from', jwt({ alg: 'EdDSA', typ: 'JWT', kid: attackerKid, jku: 'http://127.0.0.1:9/jwks.json' }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))],
      ['an x5u to fetch a certificate from', jwt({ alg: 'EdDSA', typ: 'JWT', kid, x5u: 'http://127.0.0.1:9/cert.pem' }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))],
      ['the foreign key embedded as jwk', jwt({ alg: 'EdDSA', typ: 'JWT', kid, jwk: createPrivateKey(attacker.privateKey).export({ format: 'jwk' }) }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))],
      ['a kid that is not a string', jwt({ alg: algorithm, typ: 'JWT', kid: [kid] }, accessClaims(sub, { iss: issuer }), ours)],
      ['another issuer', jwt({ alg: algorithm, typ: 'JWT', kid }, accessClaims(sub, { iss: 'https://evil.example.com' }), ours)],
      ['no issuer', jwt({ alg: algorithm, typ: 'JWT', kid }, accessClaims(sub), ours)],
      ['expired', jwt({ alg: algorithm, typ: 'JWT', kid }, accessClaims(sub, { iss: issuer, iat: 1, exp: 2 }), ours)]
    ]
    if (algorithm === 'HS256') {
      attacks.push(['our kid, another algorithm (EdDSA)', jwt({ alg: 'EdDSA', typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor('EdDSA', attacker.privateKey))])
    } else {
      attacks.push(
        ['HS256 signed with the public key as PEM', jwt({ alg: 'HS256', typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor('HS256', publicPem))],
        ['HS256 signed with the public key as JWK text', jwt({ alg: 'HS256', typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor('HS256', JSON.stringify(keys[0])))],
        ['HS256 signed with JWT_SECRET under our kid', jwt({ alg: 'HS256', typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor('HS256', TEST_SECRET))],
        ['HS256 signed with JWT_SECRET, its own kid', jwt({ alg: 'HS256', typ: 'JWT', kid: secretKey(TEST_SECRET).kid }, accessClaims(sub, { iss: issuer }), signerFor('HS256', TEST_SECRET))],
        ['no kid, signed with our key', jwt({ alg: algorithm, typ: 'JWT' }, accessClaims(sub, { iss: issuer }), ours)]
      )
      const other: AsymmetricAlgorithm = algorithm === 'EdDSA' ? 'ES256' : 'EdDSA'
      attacks.push([`our kid, another algorithm (${other})`, jwt({ alg: other, typ: 'JWT', kid }, accessClaims(sub, { iss: issuer }), signerFor(other, generateKeyPair(other).privateKey))])
    }
    for (const [label, token] of attacks) {
      const response = await me(app, token)
      t.equal(response.statusCode, 401, `${label}: 401`)
      t.equal(response.json().error.code, label === 'expired' ? 'TOKEN_EXPIRED' : 'INVALID_TOKEN', `${label}: refused`)
    }

    const withJku = jwt({ alg: algorithm, typ: 'JWT', kid, jku: 'http://127.0.0.1:9/jwks.json', x5u: 'http://127.0.0.1:9/cert.pem' }, accessClaims(sub, { iss: issuer }), ours)
    t.equal((await me(app, withJku)).statusCode, 200, 'jku and x5u on a token we signed are ignored, not followed')
  })
}

t.test('without JWT_ISSUER (HS256) tokens carry no iss and discovery names the address asked, never to be cached', async (t) => {
  const app = await build(t)
  const account = await createAccount(app)
  t.notOk('iss' in claimsOf(account.token))
  const discovery = await app.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { host: 'users.internal:8080' } })
  t.match(discovery.json(), { issuer: 'http://users.internal:8080', jwks_uri: 'http://users.internal:8080/.well-known/jwks.json' })
  t.equal(discovery.headers['cache-control'], 'no-store', 'built on the request: no cache may keep it')
  const jwks = await app.inject({ method: 'GET', url: '/.well-known/jwks.json', headers: { host: 'users.internal:8080' } })
  t.equal(jwks.headers['cache-control'], 'public, max-age=300', 'the JWKS takes nothing from the request')
})

t.test('a forged Host or X-Forwarded-Host never reaches a discovery document a cache may keep', async (t) => {
  const forged = { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }
  for (const env of [{}, { TRUST_PROXY: '127.0.0.1' }] as Array<Record<string, string>>) {
    const proxied = 'TRUST_PROXY' in env ? ' behind a trusted proxy' : ''
    const fromRequest = await build(t, { env })
    const built = await fromRequest.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: forged })
    t.match(built.json().jwks_uri, /evil\.example/, `HS256 without JWT_ISSUER${proxied}: the addresses come from the request`)
    t.equal(built.headers['cache-control'], 'no-store', `HS256 without JWT_ISSUER${proxied}: and no cache may keep them`)

    const issuer = 'https://auth.example.com'
    const key = generateKeyPair('EdDSA')
    const configured = await build(t, { env: { ...env, JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: key.privateKey, JWT_ISSUER: issuer } })
    const fixed = await configured.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: forged })
    t.match(fixed.json(), { issuer, jwks_uri: `${issuer}/oidc/jwks`, token_endpoint: `${issuer}/oidc/token` }, `EdDSA${proxied}: JWT_ISSUER, whatever the headers`)
    t.notMatch(fixed.body, /evil\.example/)
    t.equal(fixed.headers['cache-control'], 'public, max-age=300', `EdDSA${proxied}: so caches may keep it`)
    // The authorization server's own copy, and the addresses it redirects to, are the issuer's too.
    const own = await configured.inject({ method: 'GET', url: '/oidc/.well-known/openid-configuration', headers: forged })
    t.match(own.json(), { issuer, token_endpoint: `${issuer}/oidc/token` }, `EdDSA${proxied}: under /oidc too`)
    t.notMatch(own.body, /evil\.example/)
  }
})

t.test('a JWT_ISSUER that is a name: tokens carry it, discovery shows it and builds addresses on the address asked', async (t) => {
  const issuer = 'urn:example:users'
  const key = generateKeyPair('EdDSA')
  const app = await build(t, { env: { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: key.privateKey, JWT_ISSUER: issuer } })
  const account = await createAccount(app)
  t.equal(claimsOf(account.token).iss, issuer)
  const discovery = await app.inject({ method: 'GET', url: '/.well-known/openid-configuration', headers: { host: 'users.internal:8080' } })
  t.match(discovery.json(), { issuer, jwks_uri: 'http://users.internal:8080/.well-known/jwks.json', refresh_endpoint: 'http://users.internal:8080/api/v1/auth/refresh' })
  t.equal(discovery.headers['cache-control'], 'no-store', 'addresses built on the request: no cache may keep them')
  const { keys } = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  const { payload } = await jwtVerify(account.token, createLocalJWKSet({ keys }), { issuer, algorithms: ['EdDSA'] })
  t.equal(payload.sub, account.id, 'a verifier checking that issuer accepts the token')
  const header = { alg: 'EdDSA', typ: 'JWT', kid: app.config.jwt.current.kid }
  const ours = signerFor('EdDSA', key.privateKey)
  t.equal((await me(app, jwt(header, accessClaims(account.id, { iss: issuer }), ours))).statusCode, 200, 'our key and that issuer: accepted')
  t.equal((await me(app, jwt(header, accessClaims(account.id, { iss: 'urn:example:other' }), ours))).statusCode, 401, 'another issuer is refused')
})

t.test('a token without kid (issued before key ids) is accepted under the HS256 key only', async (t) => {
  const app = await build(t)
  const account = await createAccount(app)
  const legacy = jwt({ alg: 'HS256', typ: 'JWT' }, accessClaims(account.id), signerFor('HS256', TEST_SECRET))
  t.equal((await me(app, legacy)).statusCode, 200)
})

t.test('moving from HS256 to EdDSA: the former secret as a previous key keeps tokens valid until it is removed', async (t) => {
  const { url } = sqliteFile(t)
  const former = 'former-secret-of-at-least-32-characters'
  const issuer = 'https://auth.example.com'
  const before = await build(t, { databaseUrl: url, env: { JWT_SECRET: former, JWT_ISSUER: issuer } })
  const account = await createAccount(before)
  await before.close()

  const ed = generateKeyPair('EdDSA')
  const after = await build(t, { databaseUrl: url, env: { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed.privateKey, JWT_PREVIOUS_KEYS: former, JWT_ISSUER: issuer } })
  t.equal((await me(after, account.token)).statusCode, 200, 'a token of the former secret is still accepted')
  const jwks = (await after.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  t.same(jwks.keys.map((key: { kid: string }) => key.kid), [after.config.jwt.current.kid], 'the former secret is not published')
  await after.close()

  const later = await build(t, { databaseUrl: url, env: { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: ed.privateKey, JWT_ISSUER: issuer } })
  const refused = await me(later, account.token)
  t.equal(refused.statusCode, 401)
  t.equal(refused.json().error.code, 'INVALID_TOKEN', 'refused once the former secret is removed')
})

for (const algorithm of ['ES256', 'RS256'] as const) {
  t.test(`${algorithm}: a token of a retired key verifies while the key is in JWT_PREVIOUS_KEYS, and is refused once it is dropped`, async (t) => {
    const { url } = sqliteFile(t)
    const a = generateKeyPair(algorithm)
    const b = generateKeyPair(algorithm)
    const issuer = 'https://auth.example.com'
    const before = await build(t, {
      databaseUrl: url,
      env: { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: a.privateKey, JWT_ISSUER: issuer }
    })
    const account = await createAccount(before)
    const kidA = before.config.jwt.current.kid
    t.equal(headerOf(account.token).kid, kidA)
    await before.close()

    const after = await build(t, {
      databaseUrl: url,
      env: {
        JWT_ALGORITHM: algorithm,
        JWT_PRIVATE_KEY: b.privateKey,
        JWT_PREVIOUS_KEYS: a.publicKey,
        JWT_ISSUER: issuer
      }
    })
    const kidB = after.config.jwt.current.kid
    t.not(kidB, kidA)
    t.equal((await me(after, account.token)).statusCode, 200, 'A\'s token is accepted while A is a previous key')
    const jwks = (await after.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
    t.same(jwks.keys.map((key: { kid: string }) => key.kid), [kidB, kidA], 'the JWKS lists B, then A')
    const { protectedHeader } = await jwtVerify(account.token, createLocalJWKSet(jwks), { algorithms: [algorithm] })
    t.equal(protectedHeader.kid, kidA, 'and a JWKS verifier accepts it by A\'s kid')
    await after.close()

    const later = await build(t, {
      databaseUrl: url,
      env: { JWT_ALGORITHM: algorithm, JWT_PRIVATE_KEY: b.privateKey, JWT_ISSUER: issuer }
    })
    const refused = await me(later, account.token)
    t.equal(refused.statusCode, 401)
    t.equal(refused.json().error.code, 'INVALID_TOKEN', 'refused once A is dropped')
    const { keys } = (await later.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
    t.same(keys.map((key: { kid: string }) => key.kid), [kidB], 'and A is no longer published')
    await t.rejects(jwtVerify(account.token, createLocalJWKSet({ keys }), { algorithms: [algorithm] }), { code: 'ERR_JWKS_NO_MATCHING_KEY' }, 'nor verifies elsewhere')
  })
}

t.test('the JWKS lists the current key and the previous public keys, each once', async (t) => {
  const current = generateKeyPair('ES256')
  const previous = [generateKeyPair('EdDSA'), generateKeyPair('RS256')]
  const app = await build(t, {
    env: { JWT_ALGORITHM: 'ES256', JWT_PRIVATE_KEY: current.privateKey, JWT_PREVIOUS_KEYS: [current.publicKey, ...previous.map((pair) => pair.publicKey)].join(''), JWT_ISSUER: 'https://auth.example.com' }
  })
  const { keys } = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()
  t.same(keys.map((key: { alg: string }) => key.alg), ['ES256', 'EdDSA', 'RS256'])
  const discovery = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json()
  t.same(discovery.api_token_signing_alg_values_supported, ['ES256', 'EdDSA', 'RS256'], 'discovery lists the algorithm of every key accepted, the current one first')
})

t.test('discovery keeps listing HS256 while a former secret is accepted, and each algorithm once', async (t) => {
  const current = generateKeyPair('EdDSA')
  const app = await build(t, {
    env: { JWT_ALGORITHM: 'EdDSA', JWT_PRIVATE_KEY: current.privateKey, JWT_PREVIOUS_KEYS: `${generateKeyPair('EdDSA').publicKey}${TEST_SECRET}`, JWT_ISSUER: 'https://auth.example.com' }
  })
  const discovery = (await app.inject({ method: 'GET', url: '/.well-known/openid-configuration' })).json()
  t.same(discovery.api_token_signing_alg_values_supported, ['EdDSA', 'HS256'])
})

t.test('both endpoints are in the OpenAPI document with their response schemas, and public', async (t) => {
  const document = await buildOpenApiDocument() as {
    paths: Record<string, Record<string, {
      responses: Record<string, { content: Record<string, { schema: unknown }> }>
      security?: unknown
    }>>
    components: { schemas: Record<string, unknown> }
  }
  const jwks = document.paths['/.well-known/jwks.json']?.get
  const discovery = document.paths['/.well-known/openid-configuration']?.get
  t.same(jwks?.responses['200']?.content['application/json']?.schema, { $ref: '#/components/schemas/Jwks' })
  t.same(discovery?.responses['200']?.content['application/json']?.schema, { $ref: '#/components/schemas/OpenIdConfiguration' })
  t.same(jwks?.security, [], 'no bearer authentication')
  t.ok(document.components.schemas.PublicJwk)
})
