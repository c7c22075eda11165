import createError, { type FastifyErrorConstructor } from '@fastify/error'
import type { ErrorDetail, ValidationIssue } from '../schemas/errors.js'
import { TokenVerificationError } from './security/tokens.js'

/**
 * The service's error table (docs/api.md, "Errors"): every error a client can see is one of
 * these, with its code, status and message. `%s` placeholders take constructor arguments.
 */
export const Errors = {
  VALIDATION_FAILED: createError('VALIDATION_FAILED', 'Validation failed', 400),
  INVALID_OAUTH_STATE: createError('INVALID_OAUTH_STATE', 'Invalid or expired OAuth state', 400),
  INVALID_ONE_TIME_TOKEN: createError('INVALID_ONE_TIME_TOKEN', 'Invalid, used or expired token', 400),
  OAUTH_ACCESS_DENIED: createError('OAUTH_ACCESS_DENIED', 'Sign-in cancelled at the provider', 401),
  MISSING_TOKEN: createError('MISSING_TOKEN', 'Missing token', 401),
  AUTHENTICATION_REQUIRED: createError('MISSING_TOKEN', 'Authentication required', 401),
  INVALID_TOKEN: createError('INVALID_TOKEN', 'Invalid token', 401),
  TOKEN_EXPIRED: createError('TOKEN_EXPIRED', 'Invalid token', 401),
  INVALID_CREDENTIALS: createError('INVALID_CREDENTIALS', 'Invalid email or password', 401),
  INVALID_MFA_CODE: createError('INVALID_MFA_CODE', 'Invalid MFA code', 401),
  TOKEN_REUSED: createError('TOKEN_REUSED', 'Refresh token reused; session revoked', 401),
  SESSION_EXPIRED: createError('SESSION_EXPIRED', 'Session expired', 401),
  FORBIDDEN: createError('FORBIDDEN', 'Permission denied. Requires: %s', 403),
  MFA_ENROLLMENT_REQUIRED: createError('MFA_ENROLLMENT_REQUIRED', 'MFA enrollment required', 403),
  EMAIL_NOT_VERIFIED: createError('EMAIL_NOT_VERIFIED', 'E-mail address not verified', 403),
  REAUTHENTICATION_REQUIRED: createError('REAUTHENTICATION_REQUIRED', 'This change needs a proof that it is the account holder: one of the proofs in details, in the request or through POST /api/v1/auth/reauthenticate', 403),
  ACCESS_DENIED: createError('ACCESS_DENIED', 'Access denied by zero-trust evaluation', 403),
  NOT_FOUND: createError('NOT_FOUND', '%s not found', 404),
  UNSUPPORTED_PROVIDER: createError('UNSUPPORTED_PROVIDER', 'Unsupported OAuth2 provider: %s', 404),
  METHOD_NOT_ALLOWED: createError('METHOD_NOT_ALLOWED', 'Method %s not allowed on %s', 405),
  EMAIL_ALREADY_REGISTERED: createError('EMAIL_ALREADY_REGISTERED', 'Email already registered', 409),
  CONFLICT: createError('CONFLICT', '%s', 409),
  REQUEST_TIMEOUT: createError('REQUEST_TIMEOUT', 'Request not received in time', 408),
  PAYLOAD_TOO_LARGE: createError('PAYLOAD_TOO_LARGE', 'Request body exceeds 10240 bytes', 413),
  UNSUPPORTED_MEDIA_TYPE: createError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type: request bodies must be application/json', 415),
  HEADERS_TOO_LARGE: createError('HEADERS_TOO_LARGE', 'Request headers too large', 431),
  ACCOUNT_LOCKED: createError('ACCOUNT_LOCKED', 'Account temporarily locked after too many failed sign-ins', 423),
  RATE_LIMITED: createError('RATE_LIMITED', 'Rate limit exceeded', 429),
  INTERNAL_ERROR: createError('INTERNAL_ERROR', 'Internal server error', 500),
  OAUTH_PROVIDER_ERROR: createError('OAUTH_PROVIDER_ERROR', 'OAuth provider error: %s', 502),
  SERVICE_UNAVAILABLE: createError('SERVICE_UNAVAILABLE', 'Service unavailable: %s', 503)
} satisfies Record<string, FastifyErrorConstructor>

/** A 400 VALIDATION_FAILED carrying one detail per problem. */
export function validationFailed (details: ValidationIssue[]) {
  return Object.assign(new Errors.VALIDATION_FAILED(), { details })
}

const SERVICE_ERRORS = Object.values(Errors)

/** True for errors raised from the table above (as opposed to library or programming errors). */
export function isServiceError (error: unknown): error is Error & { code: string, statusCode: number, details?: ErrorDetail[] } {
  return SERVICE_ERRORS.some((ServiceError) => error instanceof ServiceError)
}

/** A failed token verification as the error to answer: an expired token tells the client to refresh. */
export function tokenFailure (error: unknown): Error {
  return error instanceof TokenVerificationError && error.reason === 'expired' ? new Errors.TOKEN_EXPIRED() : new Errors.INVALID_TOKEN()
}
