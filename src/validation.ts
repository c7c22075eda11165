import type AjvCompiler from '@fastify/ajv-compiler'
import { CANONICAL_UUID } from '../schemas/common.js'
import { canonicalUuid } from './store/ids.js'

/** Where Ajv found the value it validates: the object or array holding it, and the key. */
interface ValueContext { parentData?: Record<string | number, unknown>, parentDataProperty: string | number }

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
