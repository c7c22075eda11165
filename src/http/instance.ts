import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import fp from 'fastify-plugin'
import pino from 'pino'
import app, { type AppOptions } from '../app.js'
import type { Config } from '../config/index.js'
import { LineBatcher, type LogDestination } from './log-batching.js'
import { answerClientError, answerFrameworkError } from '../plugins/infrastructure/error-handler.js'
import { ExchangeLogController, logSerializers } from './request-log.js'
import { buildValidator, jsonBodyParser } from './validation.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Writes the request's log line once its answer is sent, for an answer Fastify's reply does not send. */
    logWhenAnswered: (request: FastifyRequest, reply: FastifyReply) => void
  }
}
import { buildSerializer } from './serialization.js'

/**
 * Log lines waiting to be written are capped: if the output cannot keep up, lines beyond
 * this are dropped rather than held in memory without bound.
 */
const LOG_BUFFER_BYTES = 16 * 1024 * 1024
const LOG_BATCH_BYTES = 4096
/**
 * The most one write system call takes. sonic-boom keeps one write in flight and, by default,
 * at most 16 KiB in it: at ~10k requests/s of ~400-byte lines that was less than the log
 * produced between two completions on a busy event loop, and the backlog (and RSS) grew.
 */
const LOG_MAX_WRITE_BYTES = 1024 * 1024
const LOG_FLUSH_MS = 250

/** The 10 KB body limit (docs/api.md, "Limits"). */
export const BODY_LIMIT_BYTES = 10_240

/** The longest path parameter, a device_id of 128 code points, is up to 256 UTF-16 units. */
const MAX_PATH_PARAMETER_LENGTH = 256

const schemaController = { compilersFactory: { buildValidator, buildSerializer } } as unknown as FastifyServerOptions['schemaController']

/**
 * Standard output, written asynchronously in batches: a write per line would cost a system
 * call per request. Lines are written once 4 KiB are waiting, or within LOG_FLUSH_MS when
 * traffic is light, and flushed synchronously when the process exits. Buffer mode: sonic-boom
 * adds up the batches' lengths instead of re-measuring its pending text on every write.
 */
function standardOutput (): LogDestination {
  const destination = pino.destination({
    dest: 1,
    sync: false,
    contentMode: 'buffer',
    minLength: LOG_BATCH_BYTES,
    maxWrite: LOG_MAX_WRITE_BYTES,
    periodicFlush: LOG_FLUSH_MS,
    maxLength: LOG_BUFFER_BYTES
  })
  // In buffer mode sonic-boom takes Buffers; its typings know only its text mode.
  return destination as unknown as LogDestination
}

function jsonBodies (instance: FastifyInstance): void {
  const parse = jsonBodyParser(instance)
  instance.removeContentTypeParser('application/json')
  instance.addContentTypeParser('application/json', { parseAs: 'string' }, parse)
}

/**
 * The Fastify instance with the application registered; `ready()` and `listen()` are the
 * caller's. Log lines go to `destination`, standard output unless another is given.
 */
export function createInstance (
  config: Config, destination: LogDestination = standardOutput(), options: Omit<AppOptions, 'config'> = {}
): FastifyInstance {
  const lines = new LineBatcher(destination)
  const logger = pino({ level: config.logLevel, serializers: logSerializers }, lines)
  const logController = new ExchangeLogController(logger, lines)
  const instance = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT_BYTES,
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_LENGTH },
    frameworkErrors: (error, request, reply) => {
      logController.logWhenAnswered(request, reply)
      answerFrameworkError(error, request, reply)
    },
    clientErrorHandler: answerClientError,
    trustProxy: config.trustProxy,
    forceCloseConnections: 'idle',
    // While closing, a request arriving on a kept-alive connection is served (the database
    // closes only after the last connection) and its connection closed after the answer,
    // rather than refused with Fastify's own 503 body, which is not the error envelope.
    return503OnClosing: false,
    logController,
    schemaController
  })
  // For answers given outside Fastify's reply (src/routes/oidc/: oidc-provider answers on the raw response).
  instance.decorate('logWhenAnswered', (request: FastifyRequest, reply: FastifyReply) => { logController.logWhenAnswered(request, reply) })
  // Added before the application, so it runs after the application's own onClose hooks
  // (they run in reverse order): the log is drained once the last request has been logged.
  instance.addHook('onClose', async () => { await lines.drain() })
  jsonBodies(instance)
  // Registered through fastify-plugin, so its error handler and parsers are the root ones.
  instance.register(fp(app), { ...options, config })
  return instance
}
