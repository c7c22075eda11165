import { ConfigError, loadConfig } from '../config/index.js'
import { openDatabase } from '../store/database.js'
import { migrateToLatest } from '../store/migrations/index.js'

/** `npm run migrate`: brings DATABASE_URL's schema to the latest version (start-up does too). */
try {
  const config = loadConfig()
  const database = openDatabase(config.database)
  try {
    const applied = await migrateToLatest(database.db, database.dialect)
    process.stdout.write(applied.length === 0 ? 'Already up to date.\n' : `Applied: ${applied.join(', ')}\n`)
  } finally {
    await database.close()
  }
} catch (error) {
  process.stderr.write(`${error instanceof ConfigError ? error.message : String(error)}\n`)
  process.exitCode = 1
}
