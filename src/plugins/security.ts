import { availableParallelism } from 'node:os'
import fp from 'fastify-plugin'
import { PasswordHasher } from '../security/passwords.js'
import { TokenService } from '../security/tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    passwords: PasswordHasher
    tokens: TokenService
  }
}

/** Password hashing and token issuance, configured once for the app. */
export default fp(async (fastify) => {
  const cores = availableParallelism()
  // One hash per core keeps the CPU busy without starving the rest; a short queue
  // (about half a second of work) absorbs bursts, and beyond it sign-ins get 503.
  fastify.decorate('passwords', new PasswordHasher({ concurrency: cores, queueLimit: cores * 8 }))
  fastify.decorate('tokens', new TokenService({ secret: fastify.config.jwtSecret }))
}, { name: 'security' })
