/**
 * Verifications per second of one token, not cached, three ways: fast-jwt's verifier alone;
 * @fastify/jwt's `fastify.jwt.verify`, as the app verifies (src/plugins/application/credentials.ts);
 * and @fastify/jwt's `request.jwtVerify` with a `secret` function picking the key by `kid`.
 * Each way runs in turn, in another order each round, and the medians are compared
 * (docs/performance.md, "Tokens through @fastify/jwt"). `npm run bench:jwt`.
 */
import { performance } from 'node:perf_hooks'
import fastifyJwt from '@fastify/jwt'
import Fastify, { type FastifyRequest } from 'fastify'
import { generateKeyPair, privateKey, secretKey, type SigningKeys, type VerificationKey } from '../src/security/signing-keys.js'
import { jwtSignOptions, jwtVerifyOptions, keyedVerifier } from '../src/security/tokens.js'
import { median } from './harness.js'

const ROUNDS = 7
const VERIFICATIONS = 20_000

type Way = (token: string) => unknown

/** The three ways for one key, and a token signed under it. */
async function ways (
  keys: SigningKeys
): Promise<{ token: string, ways: Record<string, Way>, close: () => Promise<void> }> {
  const { current, issuer } = keys
  const app = Fastify()
  await app.register(fastifyJwt, {
    secret: current.jwk === null ? keys.signingKey : { private: keys.signingKey, public: current.key },
    sign: jwtSignOptions(keys),
    verify: jwtVerifyOptions(current, issuer)
  })
  const byKid = new Map<string, VerificationKey>([[current.kid, current]])
  const resolving = Fastify()
  await resolving.register(fastifyJwt, {
    // The resolver the plugin offers: the key the header's kid names, its algorithm pinned.
    secret: (_request: FastifyRequest, token: unknown, done: (error: Error | null, key?: string) => void) => {
      const { header } = token as { header: { kid?: string, alg?: string } }
      const key = header.kid === undefined ? undefined : byKid.get(header.kid)
      if (key === undefined || key.algorithm !== header.alg) done(new Error('No accepted key for this token'))
      else done(null, key.key)
    },
    decode: { complete: true },
    verify: { requiredClaims: jwtVerifyOptions(current, issuer).requiredClaims }
  })
  let requestVerify: ((this: unknown) => Promise<unknown>) | undefined
  resolving.get('/', async (request) => {
    requestVerify = request.jwtVerify as unknown as typeof requestVerify
    return {}
  })
  await app.ready()
  await resolving.inject('/')
  const token = app.jwt.sign({ sub: 'user', jti: 'id', type: 'access', roles: [], iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 900 })
  // A request as the plugin reads one: the bearer header, and its own decorator to call back.
  const request = { headers: { authorization: `Bearer ${token}` }, jwtVerify: requestVerify }
  return {
    token,
    ways: {
      'fast-jwt': keyedVerifier(keys),
      'fastify.jwt.verify': keyedVerifier(keys, () => (text) => app.jwt.verify(text)),
      'request.jwtVerify': () => request.jwtVerify?.()
    },
    close: async () => { await app.close(); await resolving.close() }
  }
}

async function perSecond (way: Way, token: string): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < VERIFICATIONS; i++) {
    const result = way(token)
    if (result instanceof Promise) await result
  }
  return VERIFICATIONS / ((performance.now() - started) / 1000)
}

const ed = privateKey(generateKeyPair('EdDSA').privateKey, 'EdDSA')
const secret = 'bench-secret-'.padEnd(48, 'x')
const setups: Array<[string, SigningKeys]> = [
  ['HS256', { signingKey: secret, current: secretKey(secret), previous: [], issuer: null }],
  ['EdDSA', { signingKey: ed.signingKey, current: ed.verification, previous: [], issuer: null }]
]

for (const [algorithm, keys] of setups) {
  const { token, ways: compared, close } = await ways(keys)
  const names = Object.keys(compared)
  const results = new Map<string, number[]>(names.map((name) => [name, []]))
  for (const name of names) await perSecond(compared[name] as Way, token)
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const name of order) results.get(name)?.push(await perSecond(compared[name] as Way, token))
  }
  const base = median(results.get('fast-jwt') ?? [])
  for (const name of names) {
    const value = median(results.get(name) ?? [])
    console.log(`${algorithm}  ${name.padEnd(20)} ${Math.round(value).toLocaleString('en').padStart(9)} /s  ${(value / base).toFixed(2)}`)
  }
  await close()
}
