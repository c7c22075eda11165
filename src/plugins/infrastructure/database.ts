import fp from 'fastify-plugin'
import { type Database, type DatabaseObservers, openDatabase } from '../../store/database.js'
import { migrateToLatest } from '../../store/migrations/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
  }
}

/**
 * Opens the database chosen by DATABASE_URL, migrates it, and closes it last; `onStatement` is
 * told every statement run (AppOptions).
 */
export default fp<Pick<DatabaseObservers, 'onStatement'>>(async (fastify, { onStatement }) => {
  const database = openDatabase(fastify.config.database, {
    onError: (error) => { fastify.log.warn({ err: error }, 'database connection lost') },
    onStatement
  })
  try {
    const applied = await migrateToLatest(database.db, database.dialect)
    if (applied.length > 0) fastify.log.info({ migrations: applied }, 'database migrated')
  } catch (error) {
    await database.close()
    throw error
  }
  fastify.decorate('database', database)
  fastify.addHook('onClose', async () => await database.close())
}, { name: 'database' })
