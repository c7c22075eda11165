import SerializerSelector from '@fastify/fast-json-stringify-compiler'

type BuildSerializer = ReturnType<typeof SerializerSelector>
type Serializer = (data: unknown) => string

const selector = SerializerSelector()

/** Compiled serializers, by the text of what they were compiled from; shared by every instance in the process. */
const compiled = new Map<string, Serializer>()

/**
 * fast-json-stringify's compiler (Fastify's own), remembering what it compiled: compiling
 * every route's response schemas was 63% of building an instance (1.3–1.9 s each with 75
 * operations), which the test suite does several hundred times, all from the same schemas; with
 * them remembered an instance builds in about 0.1 s. A serializer is reused only for the same
 * route schema under the same shared schemas and options, compared as JSON text.
 */
export const buildSerializer: BuildSerializer = (externalSchemas, options) => {
  const build = selector(externalSchemas, options)
  const context = JSON.stringify([externalSchemas ?? null, options ?? null])
  return (route) => {
    const key = `${context}${JSON.stringify(route.schema)}`
    let serializer = compiled.get(key)
    if (serializer === undefined) {
      serializer = build(route) as Serializer
      compiled.set(key, serializer)
    }
    return serializer
  }
}
