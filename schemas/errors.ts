import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { component } from './components.js'
import { ProofOfferSchema } from './proof.js'

export const ValidationIssueSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer to the offending value, e.g. /email' }),
  message: Type.String()
})
export type ValidationIssue = Static<typeof ValidationIssueSchema>

/** One error a client can see: its code, its message (`%s` takes an argument) and its HTTP status. */
export interface ErrorEntry {
  code: string
  message: string
  status: number
}

/**
 * The service's error table (docs/api.md, "Errors"), by name; src/errors.ts makes an error
 * class of each entry. Some codes appear under two names, with two messages.
 */
export const ERROR_TABLE = {
  VALIDATION_FAILED: { code: 'VALIDATION_FAILED', message: 'Validation failed', status: 400 },
  INVALID_OAUTH_STATE: { code: 'INVALID_OAUTH_STATE', message: 'Invalid or expired OAuth state', status: 400 },
  INVALID_ONE_TIME_TOKEN: { code: 'INVALID_ONE_TIME_TOKEN', message: 'Invalid, used or expired token', status: 400 },
  PASSWORD_BREACHED: { code: 'PASSWORD_BREACHED', message: 'This password has appeared in a data breach: choose another', status: 400 },
  OAUTH_ACCESS_DENIED: { code: 'OAUTH_ACCESS_DENIED', message: 'Sign-in cancelled at the provider', status: 401 },
  MISSING_TOKEN: { code: 'MISSING_TOKEN', message: 'Missing token', status: 401 },
  AUTHENTICATION_REQUIRED: { code: 'MISSING_TOKEN', message: 'Authentication required', status: 401 },
  INVALID_TOKEN: { code: 'INVALID_TOKEN', message: 'Invalid token', status: 401 },
  TOKEN_EXPIRED: { code: 'TOKEN_EXPIRED', message: 'Invalid token', status: 401 },
  INVALID_CREDENTIALS: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password', status: 401 },
  INVALID_MFA_CODE: { code: 'INVALID_MFA_CODE', message: 'Invalid MFA code', status: 401 },
  TOKEN_REUSED: { code: 'TOKEN_REUSED', message: 'Refresh token reused; session revoked', status: 401 },
  SESSION_EXPIRED: { code: 'SESSION_EXPIRED', message: 'Session expired', status: 401 },
  FORBIDDEN: { code: 'FORBIDDEN', message: 'Permission denied. Requires: %s', status: 403 },
  MFA_ENROLLMENT_REQUIRED: { code: 'MFA_ENROLLMENT_REQUIRED', message: 'MFA enrollment required', status: 403 },
  EMAIL_NOT_VERIFIED: { code: 'EMAIL_NOT_VERIFIED', message: 'E-mail address not verified', status: 403 },
  ACCOUNT_SUSPENDED: { code: 'ACCOUNT_SUSPENDED', message: 'This account is suspended until %s', status: 403 },
  MFA_REQUIRED: { code: 'MFA_REQUIRED', message: 'This needs a session signed in with a second factor or a passkey', status: 403 },
  SSO_REQUIRED: { code: 'SSO_REQUIRED', message: 'This address signs in through its organization\'s identity provider', status: 403 },
  IMPERSONATION_RESTRICTED: { code: 'IMPERSONATION_RESTRICTED', message: 'Not allowed while impersonating: %s', status: 403 },
  API_KEY_RESTRICTED: { code: 'API_KEY_RESTRICTED', message: 'Not allowed with an API key: %s', status: 403 },
  REAUTHENTICATION_REQUIRED: {
    code: 'REAUTHENTICATION_REQUIRED',
    message: 'This change needs a proof that it is the account holder: one of the proofs in details, ' +
      'in the request or through POST /api/v1/auth/reauthenticate',
    status: 403
  },
  INVITATION_EMAIL_MISMATCH: {
    code: 'INVITATION_EMAIL_MISMATCH',
    message: 'This invitation was sent to another address: sign in with the account of the invited address',
    status: 403
  },
  ACCESS_DENIED: { code: 'ACCESS_DENIED', message: 'Access denied by zero-trust evaluation', status: 403 },
  NOT_FOUND: { code: 'NOT_FOUND', message: '%s not found', status: 404 },
  UNSUPPORTED_PROVIDER: { code: 'UNSUPPORTED_PROVIDER', message: 'Unsupported OAuth2 provider: %s', status: 404 },
  METHOD_NOT_ALLOWED: { code: 'METHOD_NOT_ALLOWED', message: 'Method %s not allowed on %s', status: 405 },
  EMAIL_ALREADY_REGISTERED: { code: 'EMAIL_ALREADY_REGISTERED', message: 'Email already registered', status: 409 },
  CONFLICT: { code: 'CONFLICT', message: '%s', status: 409 },
  REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', message: 'Request not received in time', status: 408 },
  PAYLOAD_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds 10240 bytes', status: 413 },
  UNSUPPORTED_MEDIA_TYPE: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    message: 'Unsupported media type: request bodies must be application/json',
    status: 415
  },
  HEADERS_TOO_LARGE: { code: 'HEADERS_TOO_LARGE', message: 'Request headers too large', status: 431 },
  ACCOUNT_LOCKED: {
    code: 'ACCOUNT_LOCKED',
    message: 'Account temporarily locked after too many failed sign-ins',
    status: 423
  },
  RATE_LIMITED: { code: 'RATE_LIMITED', message: 'Rate limit exceeded', status: 429 },
  INTERNAL_ERROR: { code: 'INTERNAL_ERROR', message: 'Internal server error', status: 500 },
  OAUTH_PROVIDER_ERROR: { code: 'OAUTH_PROVIDER_ERROR', message: 'OAuth provider error: %s', status: 502 },
  SERVICE_UNAVAILABLE: { code: 'SERVICE_UNAVAILABLE', message: 'Service unavailable: %s', status: 503 }
} as const satisfies Record<string, ErrorEntry>

/** Each entry of the error table, in the table's order. */
const TABLE: readonly ErrorEntry[] = Object.values(ERROR_TABLE)

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

/** The response of one error status: the error body's schema, described, with the codes of that status. */
function errorResponse<T extends TSchema> (body: T, status: ErrorStatus): T {
  const codes = [...new Set(TABLE.filter((entry) => entry.status === status).map((entry) => entry.code))]
  const headers = HEADERS[status]
  return { ...body, description: `${MEANING[status]}: ${codes.join(', ')}`, ...(headers !== undefined && { headers }) }
}

/**
 * Response schemas for the error statuses a route can answer, so that every reply
 * goes through a schema (and is documented) rather than through JSON.stringify. Rate limits
 * apply to every route but the health probes (`rateLimited: false`).
 */
export function errorResponses (options: { body?: boolean, rateLimited?: boolean }, ...statuses: ErrorStatus[]) {
  return errorResponsesIn(ErrorReference, options, ...statuses)
}

/** As errorResponses, for routes whose errors are answered in another body (SCIM's, src/routes/scim/). */
export function errorResponsesIn<T extends TSchema> (
  body: T, options: { body?: boolean, rateLimited?: boolean }, ...statuses: ErrorStatus[]
) {
  const all = new Set([
    ...ALWAYS,
    ...(options.rateLimited === false ? [] : [429 as const]),
    ...(options.body === true ? WITH_BODY : []),
    ...statuses
  ])
  return Object.fromEntries([...all].sort().map((status) => [status, errorResponse(body, status)])) as
    Record<ErrorStatus, T>
}
