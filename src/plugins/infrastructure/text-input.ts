import type { preHandlerHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { ValidationIssue } from '../../../schemas/errors.js'
import { validationFailed } from '../../errors.js'
import { prependPreHandler } from '../../http/route-options.js'

/** JSON pointers to the strings under `value` that contain U+0000. */
function nulCharacters (value: unknown, path: string, found: ValidationIssue[]): ValidationIssue[] {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) found.push({ path, message: 'must not contain U+0000' })
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) nulCharacters(item, `${path}/${key}`, found)
  }
  return found
}

/**
 * PostgreSQL text cannot hold U+0000 (SQLite can), so a string containing it would be stored
 * on one database and fail as a 500 on the other. Once the schemas have passed a request,
 * such strings in the parts they validated are refused on both, as a validation failure.
 */
export default fp(async (fastify) => {
  // Added only to routes that validate some input, as a callback hook: nothing to wait for.
  fastify.addHook('onRoute', (route) => {
    const schema = route.schema ?? {}
    const parts = (['params', 'querystring', 'body'] as const).filter((part) => schema[part] !== undefined)
    if (parts.length === 0) return
    const refuseNul: preHandlerHookHandler = (request, _reply, done) => {
      const found: ValidationIssue[] = []
      for (const part of parts) nulCharacters(part === 'params' ? request.params : part === 'querystring' ? request.query : request.body, '', found)
      done(found.length > 0 ? validationFailed(found) : undefined)
    }
    prependPreHandler(route, refuseNul)
  })
}, { name: 'text-input' })
