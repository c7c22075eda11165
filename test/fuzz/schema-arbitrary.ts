import fc from 'fast-check'

/** The part of JSON Schema (2020-12, as the OpenAPI 3.1 document has it) that request schemas use. */
export interface JsonSchema {
  type?: string | string[]
  enum?: unknown[]
  const?: unknown
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  maxProperties?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
}

export interface SchemaArbitraryOptions {
  /** Values for each `format` (a schema with a format the options do not cover is refused). */
  formats: Record<string, fc.Arbitrary<unknown>>
  /** Further values offered for properties of these names, e.g. identifiers that exist. */
  hints?: Record<string, fc.Arbitrary<unknown>>
}

/**
 * Keywords that only describe. Any other keyword the generator does not know makes it throw,
 * so a schema that gains a constraint cannot be fuzzed as if it had none.
 */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$id', '$schema', 'readOnly', 'writeOnly', 'deprecated'])
const KNOWN = new Set([...ANNOTATIONS, ...['type', 'enum', 'const', 'format', 'pattern', 'minLength', 'maxLength', 'minimum', 'maximum',
  'items', 'minItems', 'maxItems', 'uniqueItems', 'properties', 'required', 'additionalProperties', 'maxProperties', 'anyOf', 'oneOf']])

const INT32 = 2 ** 31

/** Any code point (lone surrogates and NUL included), built from integers: cheap to set up. */
export const anyCodePoint = fc.integer({ min: 0, max: 0x10FFFF }).map((code) => String.fromCodePoint(code))

/** One code point: mostly printable ASCII, sometimes anything. */
const textUnit = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0x20, max: 0x7E }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: anyCodePoint }
)

function assertSupported (schema: JsonSchema): void {
  const unknown = Object.keys(schema).filter((keyword) => !KNOWN.has(keyword))
  if (unknown.length > 0) throw new Error(`schema keyword not supported by the generator: ${unknown.join(', ')}`)
}

function withinLength (schema: JsonSchema) {
  // Ajv counts code points, as [...text] does.
  return (text: string) => {
    const length = [...text].length
    return length >= (schema.minLength ?? 0) && length <= (schema.maxLength ?? Infinity)
  }
}

function stringValue (schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  if (schema.format !== undefined) {
    const format = options.formats[schema.format]
    if (format === undefined) throw new Error(`no generator for format "${schema.format}"`)
    return format
  }
  if (schema.pattern !== undefined) return fc.stringMatching(new RegExp(schema.pattern, 'u')).filter(withinLength(schema))
  return fc.string({ unit: textUnit, minLength: schema.minLength ?? 0, maxLength: schema.maxLength ?? 64 })
}

/**
 * Required properties, and a subset of the optional ones (fc.record would add nearly all of
 * them, and some only go together with few others, as `cursor` with `page`), no more in all
 * than maxProperties.
 */
function objectValue (schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  const required = new Set(schema.required ?? [])
  const properties = Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const own = validValue(property, options)
    const hint = options.hints?.[name]
    return [name, hint === undefined ? own : fc.oneof(own, hint)] as const
  })
  const optional = properties.map(([name]) => name).filter((name) => !required.has(name))
  const room = Math.max(0, (schema.maxProperties ?? Infinity) - required.size)
  return fc.tuple(fc.record(Object.fromEntries(properties)), fc.subarray(optional))
    .map(([values, chosen]) => Object.fromEntries(Object.entries(values)
      .filter(([name]) => required.has(name) || chosen.slice(0, room).includes(name))))
}

/** Values the schema accepts (as far as formats and hints are right), shrinking toward simple ones. */
export function validValue (schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  assertSupported(schema)
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum)
  const branches = schema.anyOf ?? schema.oneOf
  if (branches !== undefined) return fc.oneof(...branches.map((branch) => validValue(branch, options)))
  if (Array.isArray(schema.type)) {
    return fc.oneof(...schema.type.map((type) => validValue({ ...schema, type }, options)))
  }
  switch (schema.type) {
    case 'string': return stringValue(schema, options)
    case 'integer': return fc.integer({ min: schema.minimum ?? -INT32, max: schema.maximum ?? INT32 })
    case 'number': return fc.double({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9, noNaN: true })
    case 'boolean': return fc.boolean()
    case 'null': return fc.constant(null)
    case 'array': {
      const bounds = { minLength: schema.minItems ?? 0, maxLength: schema.maxItems ?? 5 }
      const items = validValue(schema.items ?? {}, options)
      // Items compared as JSON, as Ajv compares them for uniqueItems.
      return schema.uniqueItems === true
        ? fc.uniqueArray(items, { ...bounds, selector: (item) => JSON.stringify(item) })
        : fc.array(items, bounds)
    }
    case 'object': return objectValue(schema, options)
    // No type: any JSON value (a SCIM PATCH operation's value).
    case undefined: return fc.jsonValue({ maxDepth: 3 })
    default: throw new Error(`schema type not supported by the generator: ${String(schema.type)}`)
  }
}

/** The JSON type of a value, as JSON Schema names it. */
export function jsonType (value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

/**
 * Values on both sides of each limit the schema sets: lengths at and beyond minLength and
 * maxLength (in ASCII and in astral characters, which are two UTF-16 units each), numbers at
 * and beyond minimum and maximum, near-miss enum values, and numbers written as strings.
 */
export function boundaryValues (schema: JsonSchema): unknown[] {
  const values: unknown[] = []
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes('string')) {
    for (const length of [schema.minLength, schema.maxLength].filter((limit) => limit !== undefined)) {
      for (const size of [length - 1, length, length + 1].filter((size) => size >= 0)) values.push('a'.repeat(size), '\u{1D49C}'.repeat(size))
    }
    values.push('', ' ', '0', '-1', '1.5', 'true', 'null')
  }
  if (types.includes('integer') || types.includes('number')) {
    for (const limit of [schema.minimum, schema.maximum].filter((limit) => limit !== undefined)) {
      values.push(limit - 1, limit, limit + 1, String(limit))
    }
    values.push(0, -1, 1.5, -0.5, INT32, 2 ** 53 + 2, -(2 ** 53), 1e308, -1e308, '1', '1e3', '1e400', 'Infinity', '-Infinity')
  }
  for (const option of schema.enum ?? []) {
    if (typeof option === 'string') values.push(option.toUpperCase(), ` ${option}`, `${option}\u0000`, option.slice(0, -1))
  }
  return values
}
