import { availableParallelism } from 'node:os'
import fastifyJwt from '@fastify/jwt'
import fp from 'fastify-plugin'
import { PasswordHasher } from '../security/passwords.js'
import { JWT_SIGN_OPTIONS, JWT_VERIFY_OPTIONS, type TokenClaims, TokenService } from '../security/tokens.js'

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
  await fastify.register(fastifyJwt, {
    secret: fastify.config.jwtSecret,
    sign: JWT_SIGN_OPTIONS,
    verify: {
      ...JWT_VERIFY_OPTIONS,
      // The guards admit only the exact `Bearer ` scheme before they ask for a verification.
      extractToken: (request) => request.headers.authorization?.slice('Bearer '.length).trim()
    },
    // `request.user` is the caller as the store knows them (plugins/authentication.ts).
    decoratorName: 'tokenClaims'
  })
  fastify.decorate('tokens', new TokenService({ jwt: fastify.jwt }))
}, { name: 'security' })
