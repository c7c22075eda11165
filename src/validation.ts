import AjvCompiler from '@fastify/ajv-compiler'
import type { TSchema } from '@sinclair/typebox'
import { CANONICAL_UUID } from '../schemas/common.js'
import { canonicalUuid } from './store/ids.js'

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
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== CANONICAL_UUID).map(([key, item]) => [key, withoutCanonicalMarks(item)]))
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
      if (enabled && context?.parentData !== undefined) context.parentData[context.parentDataProperty] = canonicalUuid(value)
      return true
    }
  })
}

/**
 * A check of one value against a schema, with the request validators' formats, for values
 * that reach the service other than in a request (an identity provider's profile).
 */
export function schemaCheck (schema: TSchema): (value: unknown) => boolean {
  const compile = AjvCompiler()({}, { customOptions: { coerceTypes: false, removeAdditional: false } })
  // The compiler takes a route definition; only its schema matters here.
  const validate = compile({ schema, method: 'POST', url: '/', httpPart: 'body' })
  return (value) => validate(value) === true
}
