import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { component } from './components.js'

/**
 * Marks a request's UUID for rewriting to its canonical spelling as it is validated
 * (src/http/validation.ts): UUIDs are case-insensitive (docs/api.md, "Identifiers") and the `uuid` format
 * takes the `urn:uuid:` form, while the service stores and compares them in lower case.
 */
export const CANONICAL_UUID = 'x-canonical-uuid'

/**
 * What the document's examples sign up and sign in with, so that Swagger UI's "Try it out" works
 * as shown: the password meets either PASSWORD_POLICY.
 */
export const EXAMPLE_EMAIL = 'ada@example.com'
export const EXAMPLE_PASSWORD = 'Analytical-Engine-1843'

export const IdSchema = Type.String({
  format: 'uuid',
  [CANONICAL_UUID]: true,
  examples: ['0193b5a2-7c1e-7d40-9a6b-2f1c8e4d3a90'],
  description: 'Resource identifier (UUID, time-ordered, in lower case; requests may spell it in any case or as urn:uuid:…)'
})

export const TimestampSchema = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC timestamp'
})

export const CodeSchema = Type.String({ pattern: '^[0-9]{6}$', examples: ['123456'], description: 'A 6-digit TOTP or backup code' })

export const IdParamsSchema = Type.Object({ id: IdSchema }, { additionalProperties: false })
export type IdParams = Static<typeof IdParamsSchema>

/** The `$id` a named schema was registered under (its title). */
function nameOf (schema: TSchema): string {
  const { title } = schema as { title?: unknown }
  if (typeof title !== 'string') throw new Error('envelope items need a title: it names their component')
  return title
}

/** Every single resource travels as `{ data: <resource> }`, named `<Title>Response` (docs/api.md, "Conventions"). */
export function DataEnvelope<T extends TSchema> (item: T) {
  const name = nameOf(item)
  return component(`${name}Response`, Type.Object({ data: component(name, item) }))
}

/**
 * OpenAPI security requirement of routes that take a bearer token (the scheme is in
 * src/plugins/infrastructure/documentation.ts).
 */
export const BEARER = [{ bearerAuth: [] }]
/** SCIM routes: a directory's bearer token (docs/api.md, "SCIM provisioning"). */
export const DIRECTORY_BEARER = [{ scimToken: [] }]
/** Routes anyone may call: no credentials. */
export const PUBLIC: Array<Record<string, string[]>> = []
/** Public routes that show more to a signed-in caller, and refuse a token that is sent but bad. */
export const OPTIONAL_BEARER: Array<Record<string, string[]>> = [{}, { bearerAuth: [] }]

/**
 * A response schema with what the OpenAPI document says of its status: a description and the
 * headers it carries (the serializers read neither).
 */
export function described<T extends TSchema> (schema: T, description: string, headers?: Record<string, TSchema>): T {
  return { ...schema, description, ...(headers !== undefined && { headers }) }
}

/** The `Location` of a created resource (docs/api.md, "Conventions"). */
export const LOCATION = { Location: Type.String({ description: 'Path of the created resource' }) }
