import createError, { type FastifyErrorConstructor } from '@fastify/error'
import { ERROR_TABLE, type ErrorDetail, type ValidationIssue } from '../schemas/errors.js'
import { TokenVerificationError } from './security/tokens.js'
import { StoreConflict } from './store/errors.js'

type ErrorTable = typeof ERROR_TABLE

/** The error class of each entry of the table, typed with its code and status. */
type ServiceErrors = {
  [Name in keyof ErrorTable]: FastifyErrorConstructor<{
    code: ErrorTable[Name]['code']
    statusCode: ErrorTable[Name]['status']
  }>
}

/**
 * The service's error table (docs/api.md, "Errors") as error classes: every error a client can
 * see is one of these, with its code, status and message. `%s` placeholders take constructor arguments.
 */
export const Errors = Object.fromEntries(Object.entries(ERROR_TABLE).map(([name, { code, message, status }]) =>
  [name, createError(code, message, status)])) as ServiceErrors satisfies Record<string, FastifyErrorConstructor>

/** A 400 VALIDATION_FAILED carrying one detail per problem. */
export function validationFailed (details: ValidationIssue[]) {
  return Object.assign(new Errors.VALIDATION_FAILED(), { details })
}

/** A 429 RATE_LIMITED whose Retry-After says when a limit's window lets one more in. */
export function limitReached (retryAt: string, now: number) {
  const retryAfter = Math.max(1, Math.ceil((Date.parse(retryAt) - now) / 1000))
  return Object.assign(new Errors.RATE_LIMITED(), { retryAfter })
}

const SERVICE_ERRORS = Object.values(Errors)

/** True for errors raised from the table above (as opposed to library or programming errors). */
export function isServiceError (
  error: unknown
): error is Error & { code: string, statusCode: number, details?: ErrorDetail[], retryAfter?: number } {
  return SERVICE_ERRORS.some((ServiceError) => error instanceof ServiceError)
}

/** A failed token verification as the error to answer: an expired token tells the client to refresh. */
export function tokenFailure (error: unknown): Error {
  return error instanceof TokenVerificationError && error.reason === 'expired' ? new Errors.TOKEN_EXPIRED() : new Errors.INVALID_TOKEN()
}

/**
 * For `.catch` on the store's writes: throws a store conflict as the error the client sees
 * (docs/api.md, "Errors"), any other error unchanged.
 */
export function rethrowServiceError (error: unknown): never {
  if (!(error instanceof StoreConflict)) throw error
  switch (error.reason) {
    case 'email_taken': throw new Errors.EMAIL_ALREADY_REGISTERED()
    case 'passkey_registered': throw new Errors.CONFLICT('Passkey already registered')
    case 'device_trusted': throw new Errors.CONFLICT('Device already trusted')
    case 'slug_taken': throw new Errors.CONFLICT('Slug already taken')
    case 'already_member': throw new Errors.CONFLICT('Already a member of this organization')
    case 'domain_claimed': throw new Errors.CONFLICT('Domain already claimed by this organization')
    case 'domain_verified_elsewhere': throw new Errors.CONFLICT('Domain verified by another organization')
    case 'scim_user_exists': throw new Errors.CONFLICT('A user with this userName, or for this account, exists in the directory')
    case 'device_limit':
      throw new Errors.CONFLICT(`Device limit reached: at most ${error.limit} trusted devices per user`)
  }
}
