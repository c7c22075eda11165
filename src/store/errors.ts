/** Driver error codes, for the two dialects, that the service treats specially. */

export function isUniqueViolation (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** A write referring to a row that does not exist (any more): deleted while the request ran. */
export function isForeignKeyViolation (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23503' || code === 'SQLITE_CONSTRAINT_FOREIGNKEY'
}

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN',
  '57P01', '57P02', '57P03', // PostgreSQL: shutting down, crash, cannot connect now
  '53300', // too many connections
  '57014', // statement_timeout: the database is overloaded or a lock is held too long
  'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_CANTOPEN'
])

/** pg's error for a query that outlived its client-side query_timeout (the server stopped answering). */
export const QUERY_TIMEOUT_MESSAGE = 'Query read timeout'

/** True when the database (or its connection) is down rather than the query wrong. */
export function isStorageUnavailable (error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown, message?: unknown }
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true
  // pg reports a pool, connection or query timeout, and a query on a client whose connection
  // dropped, only in its message.
  return typeof message === 'string' && (message === QUERY_TIMEOUT_MESSAGE ||
    /timeout exceeded when trying to connect|Connection terminated|connection timeout|is not queryable/i.test(message))
}

/** What a refused write conflicted with. */
export type ConflictReason = 'email_taken' | 'passkey_registered' | 'device_trusted' | 'device_limit' | 'slug_taken' | 'already_member'
  | 'domain_claimed' | 'domain_verified_elsewhere' | 'scim_user_exists'

/**
 * A write refused by what is stored already; the services turn it into the error a client sees
 * (rethrowServiceError in src/errors.ts). `limit` is the number of devices a user may trust.
 */
export class StoreConflict extends Error {
  constructor (readonly reason: ConflictReason, readonly limit?: number) {
    super(`Store conflict: ${reason}`)
    this.name = 'StoreConflict'
  }
}
