import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Errors } from '../src/errors.js'
import { component } from './components.js'
import { ProofOfferSchema } from './proof.js'

export const ValidationIssueSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer to the offending value, e.g. /email' }),
  message: Type.String()
})
export type ValidationIssue = Static<typeof ValidationIssueSchema>

/** Each code of the error table with its status, in the table's order. */
const TABLE = Object.values(Errors).map((ServiceError) => {
  const { code, statusCode } = new ServiceError()
  return { code, status: statusCode ?? 500 }
})

/** Every code a client can see (the table names some codes twice, with two messages). */
export const ERROR_CODES = [...new Set(TABLE.map((entry) => entry.code))]

/** A detail of an error: a validation problem, or a proof REAUTHENTICATION_REQUIRED accepts. */
const ErrorDetailSchema = Type.Union([ValidationIssueSchema, ProofOfferSchema])
export type ErrorDetail = Static<typeof ErrorDetailSchema>

/**
 * `{ error: { code, message, details? } }`, details only on validation failures and on
 * REAUTHENTICATION_REQUIRED (the proofs the account can offer) (docs/api.md, "Errors").
 */
export const ErrorEnvelopeSchema = Type.Object({
  error: Type.Object({
    code: Type.String({ enum: ERROR_CODES, description: 'Machine-readable code, from the error table' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(ErrorDetailSchema))
  })
}, { title: 'Error' })
export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>

/** The one error component every route's error statuses point to. */
const ErrorReference = component('Error', ErrorEnvelopeSchema)

type ErrorStatus = 400 | 401 | 403 | 404 | 408 | 409 | 413 | 415 | 423 | 429 | 431 | 500 | 502 | 503

/** Statuses every route can answer: bad input, headers too large or too slow, unexpected failure, storage down. */
const ALWAYS: ErrorStatus[] = [400, 408, 431, 500, 503]
/** Statuses only routes that read a body can answer. */
const WITH_BODY: ErrorStatus[] = [413, 415]

/** What each status means, before the codes the error table gives it. */
const MEANING: Record<ErrorStatus, string> = {
  400: 'Invalid request: a value outside its schema (strings never contain U+0000), malformed JSON or URL, or a bad token of a message',
  401: 'Not authenticated, or a credential was refused',
  403: 'Not permitted',
  404: 'Not found',
  408: 'Request not received in time (answered before routing; the connection closes)',
  409: 'Conflicts with the current state',
  413: 'Body over 10240 bytes',
  415: 'Body that is not application/json',
  423: 'Account locked after too many failed sign-ins',
  429: 'Rate limit exceeded',
  431: 'Request headers too large (answered before routing; the connection closes)',
  500: 'Unexpected failure',
  502: 'The identity provider failed',
  503: 'The database or another dependency is unavailable'
}

const RETRY_AFTER = Type.Integer({ minimum: 0, description: 'Seconds to wait before trying again' })

/** Headers each error status carries (docs/api.md, "Errors" and "Rate limits"). */
const HEADERS: Partial<Record<ErrorStatus, Record<string, TSchema>>> = {
  401: { 'WWW-Authenticate': Type.Literal('Bearer', { description: 'Sent when the code names a token (MISSING_TOKEN, INVALID_TOKEN, TOKEN_EXPIRED, TOKEN_REUSED)' }) },
  403: { 'WWW-Authenticate': Type.Literal('Bearer error="insufficient_user_authentication"', { description: 'Sent with REAUTHENTICATION_REQUIRED (RFC 9470): the change needs a fresh proof of the account holder' }) },
  429: { 'Retry-After': RETRY_AFTER },
  503: { 'Retry-After': RETRY_AFTER }
}

/** The response of one error status: the Error component, described, with the codes of that status. */
function errorResponse (status: ErrorStatus) {
  const codes = [...new Set(TABLE.filter((entry) => entry.status === status).map((entry) => entry.code))]
  const headers = HEADERS[status]
  return { ...ErrorReference, description: `${MEANING[status]}: ${codes.join(', ')}`, ...(headers !== undefined && { headers }) } as typeof ErrorReference
}

/**
 * Response schemas for the error statuses a route can answer, so that every reply
 * goes through a schema (and is documented) rather than through JSON.stringify. Rate limits
 * apply to every route but the health probes (`rateLimited: false`).
 */
export function errorResponses (options: { body?: boolean, rateLimited?: boolean }, ...statuses: ErrorStatus[]) {
  const all = new Set([...ALWAYS, ...(options.rateLimited === false ? [] : [429 as const]), ...(options.body === true ? WITH_BODY : []), ...statuses])
  return Object.fromEntries([...all].sort().map((status) => [status, errorResponse(status)])) as Record<ErrorStatus, typeof ErrorReference>
}
