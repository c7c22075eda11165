import { parseArgs, type ParseArgsConfig } from 'node:util'
import type { FastifyInstance } from 'fastify'
import type { LogDestination } from '../http/log-batching.js'
import type { RequestContext } from '../services/context.js'

/** What a command's audit entries name as where the change came from. */
export function commandContext (command: string): RequestContext {
  return { ip: 'command-line', userAgent: `npm run ${command}`, caller: null }
}

/** Bad usage: the reason and the usage on stderr, exit 2 (as the other tasks). */
export function failUsage (reason: string, usage: string): never {
  process.stderr.write(`${reason}\n\n${usage}`)
  process.exit(2)
}

/** The command's options, or its usage: on stdout with exit 0 for --help, on stderr with exit 2 when bad. */
export function commandOptions<T extends NonNullable<ParseArgsConfig['options']>> (options: T, usage: string) {
  const help = { help: { type: 'boolean', short: 'h' } } as const
  const config = { options: { ...options, ...help }, allowPositionals: true } as const
  let parsed: ReturnType<typeof parseArgs<typeof config>>
  try {
    parsed = parseArgs(config)
  } catch (error) {
    failUsage((error as Error).message, usage)
  }
  if ((parsed.values as { help?: boolean }).help === true) {
    process.stdout.write(usage)
    process.exit(0)
  }
  return parsed
}

/**
 * Runs a command against the service as configured by the environment (DATABASE_URL migrated,
 * the same services and rules as the API), with the service's log on stderr so that stdout is
 * the command's own; the service is closed after. A failure is a message on stderr and exit 1.
 */
export async function runServiceCommand (work: (app: FastifyInstance) => Promise<void>): Promise<void> {
  let app: FastifyInstance | undefined
  try {
    // Loaded here, after the command has read its arguments: --help and bad usage answer without
    // loading the service (a second of module loading, docs/operations.md "Command-line tasks").
    const [{ default: pino }, { loadConfig }, { createInstance }] = await Promise.all([
      import('pino'), import('../config/index.js'), import('../http/instance.js')
    ])
    const config = loadConfig({ LOG_LEVEL: 'warn', ...process.env })
    const stderr = pino.destination({ dest: 2, sync: true, contentMode: 'buffer' }) as unknown as LogDestination
    app = createInstance(config, stderr)
    await app.ready()
    await work(app)
  } catch (error) {
    const details = (error as { details?: Array<{ path: string, message: string }> }).details
    const message = error instanceof Error ? error.message : String(error)
    process.stderr.write(`${message}${details === undefined ? '' : `: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`}\n`)
    process.exitCode = 1
  } finally {
    await app?.close()
  }
}
