import fp from 'fastify-plugin'
import { CursorCodec } from '../collection/cursor.js'
import { RefreshTokensRepository } from '../store/refresh-tokens.js'
import { UsersRepository } from '../store/users.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The data layer: the only code that builds SQL. */
    repositories: {
      users: UsersRepository
      refreshTokens: RefreshTokensRepository
    }
    /** Signs and checks collection cursors. */
    cursors: CursorCodec
  }
}

export default fp(async (fastify) => {
  const { db } = fastify.database
  const cursors = new CursorCodec(fastify.config.jwtSecret)
  fastify.decorate('cursors', cursors)
  fastify.decorate('repositories', {
    users: new UsersRepository(db, cursors),
    refreshTokens: new RefreshTokensRepository(db)
  })
}, { name: 'repositories', dependencies: ['database'] })
