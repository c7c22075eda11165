import { Type, type Static } from '@sinclair/typebox'
import { component } from './components.js'

export const ValidationIssueSchema = Type.Object({
  path: Type.String({ description: 'JSON pointer to the offending value, e.g. /email' }),
  message: Type.String()
})
export type ValidationIssue = Static<typeof ValidationIssueSchema>

/** `{ error: { code, message, details? } }`, details only on validation failures (docs/api.md, "Errors"). */
export const ErrorEnvelopeSchema = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'Machine-readable code, e.g. VALIDATION_FAILED' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(ValidationIssueSchema))
  })
}, { title: 'Error' })
export type ErrorEnvelope = Static<typeof ErrorEnvelopeSchema>

/** The one error component every route's error statuses point to. */
const ErrorReference = component('Error', ErrorEnvelopeSchema)

type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 423 | 429 | 500 | 502 | 503

/** Statuses every route can answer: bad input, rate limit, unexpected failure, storage down. */
const ALWAYS: ErrorStatus[] = [400, 429, 500, 503]
/** Statuses only routes that read a body can answer. */
const WITH_BODY: ErrorStatus[] = [413, 415]

/**
 * Response schemas for the error statuses a route can answer, so that every reply
 * goes through a schema (and is documented) rather than through JSON.stringify.
 */
export function errorResponses (options: { body?: boolean }, ...statuses: ErrorStatus[]) {
  const all = new Set([...ALWAYS, ...(options.body === true ? WITH_BODY : []), ...statuses])
  return Object.fromEntries([...all].sort().map((status) => [status, ErrorReference])) as Record<ErrorStatus, typeof ErrorReference>
}
