import { getSystemErrorMap } from 'node:util'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import { type Config, ConfigError, type DatabaseConfig, loadConfig } from './config/index.js'
import { createInstance } from './http/instance.js'
import { DOCUMENTATION_PATH } from './plugins/infrastructure/documentation.js'

/**
 * An error's cause in words: a system error as the system names it (`address already in use
 * (EADDRINUSE)`), after the call and path it concerned when it names a path; anything else by
 * its message and code (a PostgreSQL error's is its SQLSTATE).
 */
function causeOf (error: unknown): string {
  const { code, errno, syscall, path, message } = error as Partial<NodeJS.ErrnoException>
  const description = errno === undefined ? undefined : getSystemErrorMap().get(errno)?.[1]
  if (description !== undefined) return `${path === undefined ? '' : `${syscall ?? 'open'} ${path}: `}${description} (${code ?? 'unknown'})`
  const text = message ?? String(error)
  return code === undefined ? text : `${text} (${code})`
}

/** The database DATABASE_URL names, without its credentials. */
function databaseName (database: DatabaseConfig): string {
  if (database.dialect === 'sqlite') return `SQLite file ${database.path}`
  const host = URL.canParse(database.url) ? new URL(database.url).host : ''
  return host === '' ? 'PostgreSQL' : `PostgreSQL at ${host}`
}

/**
 * Start-up failed after the configuration check: one line on stderr naming the cause and the
 * variable to look at (docs/operations.md, "Start-up messages"), what is open closed, exit 1.
 */
async function failStart (app: FastifyInstance, problem: string): Promise<never> {
  process.stderr.write(`Start-up failed: ${problem}\n`)
  try {
    await app.close()
  } finally {
    process.exit(1)
  }
}

/** Process entry: configuration, listen, graceful shutdown (docs/operations.md, "Stopping"). */
async function main (): Promise<void> {
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  }

  const app = createInstance(config)
  // SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the database, exit 0.
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'shutting down after an unexpected error')
    else app.log.info({ signal }, 'shutting down')
    // A keep-alive connection busy at close would stay open after its response and hold
    // the exit until the grace delay: end each one as soon as it goes idle.
    app.server.keepAliveTimeout = 1
    await app.close()
  })
  try {
    await app.ready()
  } catch (error) {
    // The database is the first plugin that reaches outside the process: start-up that
    // failed before it was decorated failed opening or migrating it.
    return await failStart(app, app.hasDecorator('database')
      ? causeOf(error)
      : `cannot open the database (${databaseName(config.database)}): ${causeOf(error)} — check DATABASE_URL`)
  }
  let address: string
  try {
    address = await app.listen({ port: config.port, host: config.host })
  } catch (error) {
    const variable = ['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN'].includes(String((error as NodeJS.ErrnoException).code)) ? 'HOST' : 'PORT'
    return await failStart(app, `cannot listen on ${config.host}:${config.port}: ${causeOf(error)} — set ${variable}`)
  }
  app.log.info(`API documentation at ${address}${DOCUMENTATION_PATH}`)
}

await main()
