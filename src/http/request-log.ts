import { type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import pino, { type Logger } from 'pino'
import { redactHeaders, redactUrl } from '../security/redaction.js'

/**
 * The request log, secrets redacted (docs/api.md, "Request log", "Redaction"): one line per
 * exchange with the request (method, URL, headers, client address) and the response (status,
 * duration).
 * One line instead of Fastify's two halves the logging cost on the request path.
 */
export const logSerializers = {
  req: (request: FastifyRequest) => ({
    method: request.method,
    url: redactUrl(request.url),
    headers: redactHeaders(request.headers),
    ip: request.ip
  }),
  res: (reply: Pick<FastifyReply, 'statusCode'>) => ({ statusCode: reply.statusCode })
}

/** Where the completed-request line goes: the logger's own stream. */
export interface LineSink { write: (line: string) => unknown }

/**
 * Fastify's request log lines, as one line per exchange (request start only at debug level).
 *
 * The line for a completed request, the one every request writes, is built here rather than
 * through pino: pino's generic path (per-request child logger, serializer lookup, key-by-key
 * stringify) cost about as much as the rest of a /health request. The line is the one pino
 * would write for `reply.log.info({ req, res, responseTime }, 'request completed')`, byte for
 * byte (test/http/request-log.test.ts compares the two); failed requests, rare and carrying an
 * error, still go through pino.
 */
export class ExchangeLogController extends LogController {
  readonly #logger: Logger
  readonly #sink: LineSink
  readonly #level: string
  /** After the time: pino's own rendering of its base bindings (`,"pid":…,"hostname":…`) and the request id's key. */
  readonly #bindings: string

  constructor (logger: Logger, sink: LineSink) {
    super()
    this.#logger = logger
    this.#sink = sink
    this.#level = `{"level":${logger.levels.values.info},"time":`
    const base = (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym] ?? ''
    this.#bindings = `${base},${JSON.stringify(this.requestIdLogLabel)}:`
  }

  override incomingRequest (request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request')
  }

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error !== null && error !== undefined) {
      reply.log.error({ req: request, res: reply, responseTime: reply.elapsedTime, err: error }, 'request errored')
      return
    }
    this.#completed(request, reply.statusCode, reply.elapsedTime)
  }

  /**
   * Fastify answers a URL its router cannot take (`frameworkErrors`) without the response
   * listeners that report a completed request, so that exchange would go unlogged. Called
   * from that handler before it answers: the line is written once the answer is sent (an
   * answer that fails to send leaves none). Fastify builds that request without its proxy
   * handling, so `ip` is the connection's address even behind a TRUST_PROXY proxy.
   */
  logWhenAnswered (request: FastifyRequest, reply: FastifyReply): void {
    const started = performance.now()
    reply.raw.once('finish', () => { this.#completed(request, reply.statusCode, performance.now() - started) })
  }

  #completed (request: FastifyRequest, statusCode: number, responseTime: number): void {
    if (!this.#logger.isLevelEnabled('info')) return
    const req = JSON.stringify(logSerializers.req(request))
    this.#sink.write(`${this.#level}${Date.now()}${this.#bindings}${JSON.stringify(request.id)},"req":${req},"res":{"statusCode":${statusCode}},"responseTime":${responseTime},"msg":"request completed"}\n`)
  }
}
