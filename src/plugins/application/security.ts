import { availableParallelism } from 'node:os'
import fastifyJwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import { PasswordHasher } from '../../security/passwords.js'
import { jwtSignOptions, jwtVerifyOptions, keyedVerifier, type TokenClaims, TokenService } from '../../security/tokens.js'

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

/** Password hashing and token issuance, configured once for the app. */
export default fp(async (fastify) => {
  const cores = availableParallelism()
  // One hash per core keeps the CPU busy without starving the rest; a short queue
  // (about half a second of work) absorbs bursts, and beyond it sign-ins get 503.
  fastify.decorate('passwords', new PasswordHasher({ concurrency: cores, queueLimit: cores * 8 }))
  const keys = fastify.config.jwt
  const { current } = keys
  await fastify.register(fastifyJwt, {
    secret: current.jwk === null ? keys.signingKey : { private: keys.signingKey, public: current.key },
    sign: jwtSignOptions(keys),
    verify: jwtVerifyOptions(current, keys.issuer),
    // The plugin gives requests a slot for a verified payload (request.jwtVerify, which the
    // guards do not use: see TokenService); `request.user` is the caller (plugins/authentication.ts).
    decoratorName: 'jwtPayload'
  })
  // @fastify/jwt verifies under one key: tokens of previous keys go through the one that picks by kid.
  fastify.decorate('tokens', new TokenService({ jwt: { sign: (claims) => fastify.jwt.sign(claims), verify: keyedVerifier(keys) } }))
}, { name: 'security' })
