import fp from 'fastify-plugin'
import { type ValidationIssue, validationFailed } from '../errors.js'

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
  fastify.addHook('preHandler', async (request) => {
    const schema = request.routeOptions.schema ?? {}
    const found: ValidationIssue[] = []
    if (schema.params !== undefined) nulCharacters(request.params, '', found)
    if (schema.querystring !== undefined) nulCharacters(request.query, '', found)
    if (schema.body !== undefined) nulCharacters(request.body, '', found)
    if (found.length > 0) throw validationFailed(found)
  })
}, { name: 'text-input' })
