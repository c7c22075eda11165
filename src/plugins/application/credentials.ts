import { availableParallelism } from 'node:os'
import fastifyJwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import { PasswordHasher } from '../../security/passwords.js'
import { jwtSignOptions, jwtVerifyOptions, type KeyVerifier, keyedVerifier, type TokenClaims, TokenService } from '../../security/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    passwords: PasswordHasher
    tokens: TokenService
  }
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    /** What `fastify.jwt.sign` takes. */
    payload: TokenClaims
  }
}

/** Password hashing (`passwordRounds`: PBKDF2_ROUNDS unless given) and token issuance, configured once. */
export default fp<{ passwordRounds?: number }>(async (fastify, { passwordRounds }) => {
  const cores = availableParallelism()
  // One hash per core keeps the CPU busy without starving the rest; a short queue
  // (about half a second of work) absorbs bursts, and beyond it sign-ins get 503.
  fastify.decorate('passwords', new PasswordHasher({ rounds: passwordRounds, concurrency: cores, queueLimit: cores * 8 }))
  const keys = fastify.config.jwt
  const { current, issuer } = keys
  await fastify.register(fastifyJwt, {
    secret: current.jwk === null ? keys.signingKey : { private: keys.signingKey, public: current.key },
    sign: jwtSignOptions(keys),
    verify: jwtVerifyOptions(current, issuer),
    // The plugin gives requests a slot for a verified payload (request.jwtVerify, which the
    // guards do not use: see TokenService); `request.user` is the caller (src/plugins/application/authentication.ts).
    decoratorName: 'jwtPayload'
  })
  // A registration of @fastify/jwt verifies under one key with fixed options: previous keys get
  // one each, verify-only, in a context of their own so their decorators stay out of the app.
  // Its key resolver (a `secret` function) is only for request.jwtVerify, which needs a request
  // and answers asynchronously; refresh and MFA tokens are verified by the services, without one
  // (docs/performance.md, "Tokens through @fastify/jwt").
  const previous = new Map<string, KeyVerifier>()
  for (const key of keys.previous) {
    if (key.kid === current.kid || previous.has(key.kid)) continue
    await fastify.register(async (scope) => {
      await scope.register(fastifyJwt, { secret: { public: key.key }, verify: jwtVerifyOptions(key, issuer) })
      previous.set(key.kid, (token) => scope.jwt.verify(token))
    })
  }
  const verify = keyedVerifier(keys, (key) => previous.get(key.kid) ?? ((token) => fastify.jwt.verify(token)))
  fastify.decorate('tokens', new TokenService({ jwt: { sign: (claims) => fastify.jwt.sign(claims), verify } }))
}, { name: 'credentials' })
