import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ErrorDetail, ErrorEnvelope, ValidationIssue } from '../../../schemas/errors.js'
import { Errors, isServiceError } from '../../errors.js'
import { CapacityExceededError } from '../../security/concurrency-limiter.js'
import { isForeignKeyViolation, isStorageUnavailable } from '../../store/errors.js'
import { SECURITY_HEADERS } from './security-headers.js'

interface ErrorReply {
  status: number
  envelope: ErrorEnvelope
  headers: Record<string, string>
}

interface AjvIssue {
  keyword: string
  instancePath: string
  message?: string
  params: Record<string, unknown>
}

/**
 * Ajv's issues as the error envelope's `details`: the path names the offending property itself.
 * A value that fails its format also fails the pattern restating it (e-mail addresses,
 * schemas/user.ts): one problem, one detail.
 */
function toDetails (issues: AjvIssue[], context: string): ValidationIssue[] {
  const failedFormat = new Set(issues.filter((issue) => issue.keyword === 'format').map((issue) => issue.instancePath))
  return issues.filter((issue) => issue.keyword !== 'pattern' || !failedFormat.has(issue.instancePath)).map((issue) => {
    if (issue.keyword === 'required') {
      return { path: `${issue.instancePath}/${String(issue.params.missingProperty)}`, message: 'is required' }
    }
    if (issue.keyword === 'additionalProperties') {
      return { path: `${issue.instancePath}/${String(issue.params.additionalProperty)}`, message: 'is not an allowed property' }
    }
    // Ajv's own words name no value: the allowed ones are listed instead.
    const message = issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)
      ? `must be one of: ${issue.params.allowedValues.join(', ')}`
      : issue.message ?? 'is invalid'
    return { path: issue.instancePath, message: issue.instancePath === '' ? `${context} ${message}` : message }
  })
}

type ServiceError = Error & { code: string, statusCode: number, details?: ErrorDetail[], retryAfter?: number }

function fromService (error: ServiceError): ErrorReply {
  const envelope: ErrorEnvelope = { error: { code: error.code, message: error.message } }
  if (error.details !== undefined) envelope.error.details = error.details
  const headers: Record<string, string> = {}
  if (error.statusCode === 401 && /TOKEN/.test(error.code)) headers['www-authenticate'] = 'Bearer'
  if (error.code === 'REAUTHENTICATION_REQUIRED') headers['www-authenticate'] = 'Bearer error="insufficient_user_authentication"'
  if (error.statusCode === 503) headers['retry-after'] = '1'
  // A limit a service keeps (docs/api.md, "Organizations": invitations per hour) says when it frees.
  if (error.retryAfter !== undefined) headers['retry-after'] = String(error.retryAfter)
  return { status: error.statusCode, envelope, headers }
}

/** Maps anything thrown during a request to a status, code and message of the error table (docs/api.md, "Errors"). */
export function toErrorReply (error: FastifyError): ErrorReply {
  if (isServiceError(error)) return fromService(error)
  if (error.validation !== undefined) {
    return fromService(Object.assign(new Errors.VALIDATION_FAILED(), {
      details: toDetails(error.validation as AjvIssue[], error.validationContext ?? 'request')
    }))
  }
  if (error instanceof CapacityExceededError) return fromService(new Errors.SERVICE_UNAVAILABLE('too many sign-ins in progress'))
  if (isStorageUnavailable(error)) return fromService(new Errors.SERVICE_UNAVAILABLE('database unreachable'))
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return fromService(new Errors.PAYLOAD_TOO_LARGE())
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_TYPE':
      return fromService(new Errors.UNSUPPORTED_MEDIA_TYPE())
  }
  // Remaining client errors from the framework: malformed JSON, forbidden __proto__ keys,
  // bad URLs or content lengths. Their library text stays out of the reply.
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    const message = error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY'
      ? 'body must not be empty when Content-Type is application/json'
      : error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY'
        ? 'body is not valid JSON'
        : 'request is malformed'
    return fromService(Object.assign(new Errors.VALIDATION_FAILED(), { details: [{ path: '', message }] }))
  }
  return fromService(new Errors.INTERNAL_ERROR())
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot take (broken percent-encoding, a path
 * parameter over the length limit) is answered before any hook runs, so without this it
 * would get Fastify's own body, without the error envelope or the security headers.
 */
export function answerFrameworkError (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const { status, envelope, headers } = toErrorReply(error)
  void reply.code(status).headers({ ...SECURITY_HEADERS, ...headers }).send(envelope)
}

/**
 * A request the HTTP parser refused, as one of the service's errors (docs/api.md, "Requests refused before routing").
 */
function clientErrorReply (error: Error & { code?: string }): ErrorReply {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return fromService(new Errors.HEADERS_TOO_LARGE())
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return fromService(new Errors.REQUEST_TIMEOUT())
    default:
      return fromService(Object.assign(new Errors.VALIDATION_FAILED(), { details: [{ path: '', message: 'request is malformed' }] }))
  }
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (headers over the size
 * limit, a malformed request line, one not received in time) never becomes a request, so
 * Fastify answers it on the socket itself, with its own body. The answer here is the
 * error envelope with the security headers; the connection is closed after it, since the
 * parser cannot tell where the next request would begin.
 */
export function answerClientError (this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has nobody left to answer (Node's own handler does the same).
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  this.log.debug({ err: error }, 'request refused by the HTTP parser')
  if (socket.writable) {
    const { status, envelope, headers } = clientErrorReply(error)
    const body = JSON.stringify(envelope)
    const fields = Object.entries({ ...SECURITY_HEADERS, ...headers, 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)), connection: 'close' })
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${fields.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`)
  }
  socket.destroy(error)
}

/**
 * The methods each route path answers, for the 405 of a known path asked with another method
 * (docs/api.md, "Errors"). Paths are matched as the router matches them: a `:name` parameter
 * is one segment, a `*` the rest.
 */
class AllowedMethods {
  readonly #methods = new Map<string, Set<string>>()
  #matchers: Array<{ pattern: RegExp, methods: string[] }> | null = null

  add (url: string, method: string | string[]): void {
    const methods = this.#methods.get(url) ?? new Set<string>()
    // Only CORS preflights are answered to OPTIONS (its route matches every path).
    for (const name of [method].flat()) if (name !== 'OPTIONS') methods.add(name)
    if (methods.size > 0) this.#methods.set(url, methods)
    this.#matchers = null
  }

  /**
   * The methods of every route path that `path` matches, or none: a method the router would
   * take to a parametric route is allowed too (`/passkeys/authentication` is also `/passkeys/:id`).
   */
  on (path: string): string[] {
    this.#matchers ??= [...this.#methods].map(([url, methods]) => ({
      pattern: new RegExp(`^${url.split(/(:\w+|\*)/).map((part) => part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('')}$`),
      methods: [...methods]
    }))
    return [...new Set(this.#matchers
      .filter((matcher) => matcher.pattern.test(path))
      .flatMap((matcher) => matcher.methods))]
  }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The body a route's errors are answered in when it is not the error envelope (a protocol
     * with its own, as SCIM): made from the envelope, the status and code staying the table's.
     */
    errorRepresentation?: { mediaType: string, body: (status: number, envelope: ErrorEnvelope) => unknown }
  }
}

export interface ErrorHandlerOptions {
  /**
   * Whether the request's caller has been deleted. The application knows callers and where
   * they are stored; without it, a caller is taken to exist.
   */
  callerDeleted?: (request: FastifyRequest) => Promise<boolean>
}

/** The one error handler and the one not-found handler (docs/api.md, "Errors"). */
export default fp<ErrorHandlerOptions>(async (fastify, { callerDeleted = async () => false }) => {
  /**
   * A write referring to a row deleted while the request ran (a user deleted during a request
   * by or about them) gets the answer the request would get a moment later: a caller who no
   * longer exists holds no good token; anything else is not found.
   */
  async function vanishedReference (request: FastifyRequest): Promise<FastifyError> {
    return await callerDeleted(request) ? new Errors.INVALID_TOKEN() : new Errors.NOT_FOUND('Resource')
  }

  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    const { status, envelope, headers } = toErrorReply(
      isForeignKeyViolation(error) ? await vanishedReference(request) : error
    )
    // The few routes with a larger body limit (an IdP's metadata, the SAML ACS) tell their own.
    const { bodyLimit } = request.routeOptions
    if (status === 413 && bodyLimit !== undefined) envelope.error.message = `Request body exceeds ${bodyLimit} bytes`
    // A full hashing pool is load shed as designed (docs/operations.md, "Overload"), not a fault:
    // one warning per refusal, without a stack.
    if (error instanceof CapacityExceededError) request.log.warn('password hashing at capacity: request refused with 503')
    else if (status >= 500) request.log.error({ err: error }, 'request failed')
    const representation = request.routeOptions.config.errorRepresentation
    if (representation !== undefined) {
      return await reply.code(status).headers(headers).type(representation.mediaType)
        .send(representation.body(status, envelope))
    }
    return await reply.code(status).headers(headers).send(envelope)
  })

  const allowed = new AllowedMethods()
  fastify.addHook('onRoute', (route) => { allowed.add(route.url ?? route.path, route.method) })

  fastify.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const shown = path.slice(0, 200)
    // OPTIONS stays a 404: an origin CORS refuses learns nothing of the API (docs/api.md, "CORS").
    const methods = request.method === 'OPTIONS' ? [] : allowed.on(path)
    if (methods.length > 0) {
      const { status, envelope } = fromService(new Errors.METHOD_NOT_ALLOWED(request.method, shown))
      return await reply.code(status).header('allow', methods.join(', ')).send(envelope)
    }
    const { status, envelope } = fromService(new Errors.NOT_FOUND(`Route ${request.method} ${shown}`))
    return await reply.code(status).send(envelope)
  })
}, { name: 'error-handler' })
