import type { FastifyInstance } from 'fastify'
import { loadConfig } from '../../src/config/index.js'
import { createInstance } from '../../src/http/instance.js'
import type { LogDestination } from '../../src/http/log-batching.js'
import { loopbackResolver, noTxtRecords, TEST_SECRET } from './app.js'
import type { TestContext } from './context.js'
import { freshDatabaseUrl } from './database.js'

export type LogEntry = Record<string, unknown>

/** An app whose log is kept for the test: every line, as written, and parsed. */
export interface LoggedApp {
  app: FastifyInstance
  /** The lines written so far, as text (to search for values in any field). */
  text: () => Promise<string>
  entries: () => Promise<LogEntry[]>
}

/**
 * The app as the server builds it, logging at level info into memory instead of standard
 * output: the same logger, serializers and request log, only the destination differs.
 */
export async function buildLogged (
  t: TestContext,
  options: { postgresUrl: string | null, env?: Record<string, string> }
): Promise<LoggedApp> {
  const chunks: Buffer[] = []
  const destination: LogDestination = {
    write: (chunk) => chunks.push(chunk),
    flush: (callback) => { callback() },
    flushSync: () => {}
  }
  const config = loadConfig({
    DATABASE_URL: await freshDatabaseUrl(t, options.postgresUrl),
    JWT_SECRET: TEST_SECRET,
    LOG_LEVEL: 'info',
    CORS_ORIGINS: 'http://localhost:3000',
    // These tests send more sign-in attempts than a client may.
    RATE_LIMIT_AUTH_MAX: '1000000',
    MFA_REQUIRED_ROLES: 'none',
    ...options.env
  })
  const app = createInstance(config, destination, { resolve: loopbackResolver, resolveTxt: noTxtRecords })
  t.teardown(async () => await app.close())
  await app.ready()
  // Lines reach the destination at the end of the event loop's turn (LineBatcher).
  const text = async () => {
    await new Promise((resolve) => setImmediate(resolve))
    return Buffer.concat(chunks).toString()
  }
  const entries = async () => (await text()).split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as LogEntry)
  return { app, text, entries }
}
