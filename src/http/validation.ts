import AjvCompiler from '@fastify/ajv-compiler'
import type { FastifyBodyParser, FastifyInstance } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { CANONICAL_UUID } from '../../schemas/common.js'
import { validationFailed } from '../errors.js'
import { canonicalUuid } from '../store/ids.js'
import { rememberingCompilers } from './compiled-schemas.js'

/** Where Ajv found the value it validates: the object or array holding it, and the key. */
interface ValueContext { parentData?: Record<string | number, unknown>, parentDataProperty: string | number }

/**
 * A schema or document as published, without CANONICAL_UUID marks: they instruct this
 * service's validators and are not part of the API (JSON Schema validators in strict mode
 * would refuse the unknown keyword).
 */
export function withoutCanonicalMarks (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCanonicalMarks)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value)
    .filter(([key]) => key !== CANONICAL_UUID)
    .map(([key, item]) => [key, withoutCanonicalMarks(item)]))
}

/**
 * The validators' keyword for CANONICAL_UUID: rewrites the value in place, so handlers, the
 * database and permission checks (is this id the caller's?) see one spelling of each id.
 */
export function canonicalIds (ajv: AjvCompiler.Ajv): AjvCompiler.Ajv {
  return ajv.addKeyword({
    keyword: CANONICAL_UUID,
    type: 'string',
    schemaType: 'boolean',
    modifying: true,
    errors: false,
    validate: (enabled: boolean, value: string, _schema: unknown, context?: ValueContext) => {
      if (enabled && context?.parentData !== undefined) {
        context.parentData[context.parentDataProperty] = canonicalUuid(value)
      }
      return true
    }
  })
}

/**
 * How deeply a JSON body may nest arrays and objects. No request of the API nests more than a
 * few levels, and the walks over a body (the U+0000 check, redaction, libraries handed a
 * part of it) recurse once per level: a body of thousands of levels, small enough for the
 * body limit, must be refused before any of them runs.
 */
export const MAX_JSON_DEPTH = 32

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPENERS = new Set([0x5b, 0x7b])
const CLOSERS = new Set([0x5d, 0x7d])

/**
 * Whether JSON text opens more than `limit` arrays and objects inside one another, read
 * without parsing it (brackets inside strings do not count).
 */
export function nestedDeeperThan (text: string, limit: number): boolean {
  let depth = 0
  let inString = false
  for (let index = 0; index < text.length; index++) {
    const char = text.charCodeAt(index)
    if (inString) {
      if (char === BACKSLASH) index++
      else if (char === QUOTE) inString = false
    } else if (char === QUOTE) {
      inString = true
    } else if (OPENERS.has(char)) {
      if (++depth > limit) return true
    } else if (CLOSERS.has(char)) {
      depth--
    }
  }
  return false
}

const ajvFactory = AjvCompiler()

type ExternalSchemas = Parameters<typeof ajvFactory>[0]
type RouteDefinition = AjvCompiler.RouteDefinition

const STRICT = { removeAdditional: false, useDefaults: true, allErrors: true } as const
/** JSON bodies are not coerced ("8" is not a number). */
const BODY_OPTIONS = { customOptions: { ...STRICT, coerceTypes: false as const }, plugins: [canonicalIds] }

type Validate = ((data: unknown) => boolean) & { errors?: unknown }

/**
 * A query string's list parameters (`type: array`, as `sort` and `fields`, docs/api.md,
 * "Collections") come repeated or comma-separated: the commas are split before validation, so
 * `sort=-name,id` is the list `sort=-name&sort=id` is.
 */
function splittingCommas (validate: Validate, schema: { properties?: Record<string, { type?: unknown }> }): Validate {
  const lists = Object.entries(schema.properties ?? {}).filter(([, property]) => property.type === 'array').map(([name]) => name)
  if (lists.length === 0) return validate
  const split: Validate = (data) => {
    if (typeof data === 'object' && data !== null) {
      const query = data as Record<string, unknown>
      for (const name of lists) {
        if (query[name] !== undefined) query[name] = [query[name]].flat().flatMap((item) => typeof item === 'string' ? item.split(',') : [item])
      }
    }
    const valid = validate(data)
    split.errors = validate.errors
    return valid
  }
  return split
}

/**
 * The service's validators, remembered for the process (src/http/compiled-schemas.ts). Query
 * strings and path parameters arrive as text, so they are coerced to the schema's types;
 * bodies are not. Unknown keys are refused, never silently dropped, and every problem is
 * reported. Ids marked CANONICAL_UUID are rewritten in lower case and bare.
 */
export const buildValidator = rememberingCompilers((externalSchemas: ExternalSchemas) => {
  const body = ajvFactory(externalSchemas, BODY_OPTIONS)
  const text = ajvFactory(externalSchemas, { ...BODY_OPTIONS, customOptions: { ...STRICT, coerceTypes: 'array' as const } })
  // The pool's compilers take the whole route definition (their typings say schema).
  return (route: RouteDefinition): Validate => {
    if (route.httpPart === 'body') return body(route as object) as Validate
    const validate = text(route as object) as Validate
    return route.httpPart === 'querystring' ? splittingCommas(validate, route.schema as object) : validate
  }
})

/**
 * The problems of one value against a schema, as a request body's validator finds them, for
 * values that reach the service other than in a request (an identity provider's profile, a
 * command's options). Compiled on first use: a service without OAuth sign-in never builds it.
 */
export function schemaIssues (schema: TSchema): (value: unknown) => Array<{ path: string, message: string }> {
  let validate: Validate | undefined
  return (value) => {
    validate ??= ajvFactory({}, BODY_OPTIONS)({ schema, method: 'POST', url: '/', httpPart: 'body' }) as Validate
    if (validate(value) === true) return []
    const errors = (validate.errors ?? []) as Array<{ instancePath: string, message?: string }>
    return errors.map((error) => ({ path: error.instancePath, message: error.message ?? 'is not valid' }))
  }
}

/** Whether one value meets a schema (schemaIssues finds nothing). */
export function schemaCheck (schema: TSchema): (value: unknown) => boolean {
  const issues = schemaIssues(schema)
  return (value) => issues(value).length === 0
}

/**
 * The JSON body parser (for `parseAs: 'string'`): Fastify's own, after refusing bodies nested
 * deeper than MAX_JSON_DEPTH; JSON's other media types (SCIM's) are parsed by it too.
 */
export function jsonBodyParser (instance: FastifyInstance): FastifyBodyParser<string> {
  const parse = instance.getDefaultJsonParser('error', 'error')
  // parseAs 'string' hands over text; the typings allow a Buffer too.
  return (request, body, done) => {
    const text = body as string
    if (nestedDeeperThan(text, MAX_JSON_DEPTH)) {
      done(validationFailed([{ path: '', message: `body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }]), undefined)
      return
    }
    parse(request, text, done)
  }
}
