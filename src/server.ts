import closeWithGrace from 'close-with-grace'
import { ConfigError, loadConfig } from './config.js'
import { createInstance } from './instance.js'

/** Process entry: configuration, listen, graceful shutdown (docs/operations.md, "Stopping"). */
async function main (): Promise<void> {
  let config
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
  await app.listen({ port: config.port, host: config.host })
}

await main()
