import fc from 'fast-check'
import { type JsonSchema, type SchemaArbitraryOptions, anyCodePoint, boundaryValues, jsonType, validValue } from './schema-arbitrary.js'

/** Strings that have broken parsers, databases and templates before. */
const SPECIAL_STRINGS = [
  '', ' ', '\t\n', '\u0000', 'a\u0000b', '\uD800', 'a\uDC00b', '\uDBFF\uDFFF', '\u202Eevil\u202C', 'a\u200Bb', '\uFEFF', 'e\u0301',
  '\u{1D49C}', '\u{1F9D1}\u200D\u{1F4BB}', '\u05E9\u05DC\u05D5\u05DD', '%00', '%', '%zz', '%c0%ae', '../../etc/passwd', '..\\..\\windows',
  // eslint-disable-next-line no-template-curly-in-string -- a log-injection payload, as an attacker sends it
  "' OR '1'='1", '"; DROP TABLE users; --', '${jndi:ldap://127.0.0.1/a}', '{{7*7}}', '<script>alert(1)</script>',
  '__proto__', 'constructor', 'prototype', 'null', 'undefined', 'NaN', 'Infinity', '-1', '0', '1e309', 'true', '[]', '{}'
]

/** Keys that reach prototypes when a parser or a merge is careless. */
export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype']

/** Anything a JavaScript string holds, lone surrogates and control characters included. */
const anyUnit = fc.oneof(
  anyCodePoint,
  fc.integer({ min: 0xD800, max: 0xDFFF }).map((unit) => String.fromCharCode(unit)),
  fc.constantFrom('\u0000', '\u202E', '\u200B', '\u200F', '\uFEFF', '\u0301', '\n', '"', '\\')
)

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 3, arbitrary: fc.string({ unit: anyUnit, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('a', '\u{1D49C}', '\u0000', '%'), fc.integer({ min: 129, max: 9000 })).map(([unit, count]) => unit.repeat(count)) }
)

const hostileNumber = fc.oneof(
  fc.constantFrom(0, -0, -1, 1.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 53), 1e308, -1e308, Number.MIN_VALUE),
  fc.double({ noNaN: true, noDefaultInfinity: true })
)

/** Any JSON value, leaning toward the troublesome ones. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    // Object.fromEntries, unlike an object literal, keeps `__proto__` as an own key.
    fc.array(fc.tuple(fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS), hostileString), tie('value')), { maxLength: 3 }).map((entries) => Object.fromEntries(entries))
  )
})).value

/** A value of another JSON type than the schema's. */
function wrongType (schema: JsonSchema): fc.Arbitrary<unknown> {
  const types = new Set(Array.isArray(schema.type) ? schema.type : [schema.type])
  if (types.has('number')) types.add('integer')
  return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(), fc.constant(null), fc.constant([]), fc.constant({}),
    fc.array(fc.string({ maxLength: 4 }), { minLength: 1, maxLength: 2 }))
    .filter((value) => !types.has(jsonType(value)))
}

/** Characters that storage, encodings and comparisons treat differently. */
const SPECIAL_CHARACTERS = ['\u0000', '\uD800', '\uDFFF', '\u202E', '\u200B', '\uFEFF', '\u0301', '\u{1F9D1}', '%', '"', "'", '\\', '\n']

/** A valid string with one special character inserted: often still valid, so it reaches storage. */
export function tainted (valid: fc.Arbitrary<unknown>): fc.Arbitrary<string> {
  return fc.tuple(valid.filter((value): value is string => typeof value === 'string'), fc.constantFrom(...SPECIAL_CHARACTERS), fc.nat())
    .map(([text, character, position]) => {
      const at = position % (text.length + 1)
      return `${text.slice(0, at)}${character}${text.slice(at)}`
    })
}

/** What may replace a valid value: a limit, another type, a tainted string, or worse. */
export function replacementFor (schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  const boundaries = boundaryValues(schema)
  const types = Array.isArray(schema.type) ? schema.type : [schema.type]
  return fc.oneof(
    ...(boundaries.length > 0 ? [{ weight: 2, arbitrary: fc.constantFrom(...boundaries) }] : []),
    ...(types.includes('string') ? [{ weight: 3, arbitrary: tainted(validValue(schema, options)) }] : []),
    { weight: 1, arbitrary: wrongType(schema) },
    { weight: 1, arbitrary: hostileValue }
  )
}

/**
 * Mutations of a valid object: a required property missing, an unknown (or prototype)
 * property added, one property replaced.
 */
export function mutatedObject (schema: JsonSchema, options: SchemaArbitraryOptions): fc.Arbitrary<unknown> {
  const properties = Object.entries(schema.properties ?? {})
  const asObject = validValue(schema, options).filter((value): value is Record<string, unknown> => jsonType(value) === 'object')
  const mutations: Array<fc.Arbitrary<unknown>> = [
    fc.tuple(asObject, fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, 'role', 'id', 'is_admin'), hostileString), hostileValue)
      .map(([value, key, extra]) => Object.fromEntries([...Object.entries(value), [key, extra]]))
  ]
  if ((schema.required ?? []).length > 0) {
    mutations.push(fc.tuple(asObject, fc.constantFrom(...(schema.required ?? [])))
      .map(([value, missing]) => Object.fromEntries(Object.entries(value).filter(([key]) => key !== missing))))
  }
  if (properties.length > 0) {
    const replaced = fc.oneof(...properties.map(([name, property]) =>
      fc.tuple(fc.constant(name), replacementFor(property, options))))
    mutations.push(fc.tuple(asObject, replaced)
      .map(([value, [name, replacement]]) =>
        Object.fromEntries([...Object.entries(value).filter(([key]) => key !== name), [name, replacement]])))
  }
  return fc.oneof(...mutations)
}

/**
 * Body texts no object generator makes: nesting thousands of levels deep (under the 10240-byte
 * limit), bodies over the limit, broken JSON, a byte-order mark, invalid UTF-8.
 */
export function hostileBodyText (limit: number): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    fc.integer({ min: 1000, max: Math.floor(limit / 2) }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
    fc.integer({ min: 500, max: Math.floor((limit - 1) / 6) }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
    fc.integer({ min: limit + 1, max: limit * 8 }).map((size) => `{"pad":"${'x'.repeat(size)}"}`),
    fc.integer({ min: limit + 1, max: limit * 4 }).map((size) => `[${'1,'.repeat(Math.ceil(size / 2))}1]`),
    fc.constantFrom('', ' ', '{', '{"a":', '{"a":1,}', "{'a':1}", '{"a":NaN}', '{"a":1}/*c*/', '{"a":1}{"b":2}', '\uFEFF{}', 'null', 'true', '"text"', '1e999',
      '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"admin":true}}}', '{"a":1,"a":2}', '{"a":"\\ud800"}', '{"a":"\\u0000"}'),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => Buffer.concat([Buffer.from('{"a":"'), Buffer.from(bytes), Buffer.from('"}')]))
  )
}

/** Header values a real HTTP parser lets through: tab, visible ASCII, space and obs-text (0x80-0xFF). */
const headerUnit = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0x20, max: 0x7E }) },
  { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xFF }) },
  { weight: 1, arbitrary: fc.constant(0x09) }
).map((code) => String.fromCharCode(code))

export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: headerUnit, maxLength: 64 }),
  fc.integer({ min: 256, max: 4000 }).map((size) => 'a'.repeat(size)),
  fc.constantFrom('', ' ', '%00', '\u00FF\u00FE', '../../etc/passwd', 'null', '1, 2, 3')
)

export const contentType: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 4,
    arbitrary: fc.constantFrom('application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/json; charset=latin1',
      'application/json; charset=utf-16', 'Application/JSON', 'application/json ', 'application/json;', 'application/vnd.api+json',
      'application/problem+json', 'application/jsonx', 'text/json', 'text/plain', 'text/plain; charset=utf-8', 'multipart/form-data; boundary=----fuzz',
      'application/x-www-form-urlencoded', 'application/xml', 'application/octet-stream', '*/*', ';', 'application/', '', null)
  },
  { weight: 1, arbitrary: headerValue }
)

/** Path segments sent as they are, not encoded: traversal, separators, broken escapes. */
export const RAW_PATH_SEGMENTS = ['.', '..', '../..', '..%2F..%2Fetc%2Fpasswd', '%2e%2e', '%2e%2e%2f%2e%2e%2f', '....//....//', '..;/', '%00', '%', '%zz',
  '%c0%ae%c0%ae', '', '//', 'a/b', '?a=1', '#fragment', '%3F', ';a=1', '~', '\\..\\', '%ED%A0%80', '%FF']

/**
 * Percent-encodes text for a URL. Lone surrogates have no UTF-8 form, so they go out as the
 * bytes a careless encoder writes for them (invalid UTF-8), which the server must refuse.
 */
export function encodeUrlText (text: string): string {
  return [...text].map((character) => {
    const unit = character.charCodeAt(0)
    if (character.length === 1 && unit >= 0xD800 && unit <= 0xDFFF) {
      return [0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('')
    }
    return encodeURIComponent(character)
  }).join('')
}
