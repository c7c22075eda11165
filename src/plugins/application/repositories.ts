import fp from 'fastify-plugin'
import { CursorCodec } from '../../collection/cursor.js'
import { createRepositories, type Repositories } from '../../store/repositories.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The data layer: the only code that builds SQL. */
    repositories: Repositories
    /** Signs and checks collection cursors. */
    cursors: CursorCodec
  }
}

export default fp(async (fastify) => {
  const cursors = new CursorCodec(fastify.config.jwtSecret)
  fastify.decorate('cursors', cursors)
  fastify.decorate('repositories', createRepositories(fastify.database, { cursors, countLimit: fastify.config.collectionCountLimit }))
}, { name: 'repositories', dependencies: ['database'] })
