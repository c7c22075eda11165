import { type Static, type TSchema, Type } from '@sinclair/typebox'

/**
 * Named schemas shared by routes: registered once with Fastify (`addSchema`), referenced by
 * `$ref` from route schemas, and emitted as `components.schemas` in the OpenAPI document,
 * so a generated client gets one type per resource instead of inlined copies.
 */
const registry = new Map<string, TSchema>()

/** Registers `schema` under its `$id` and answers a reference to it, typed as the schema. */
export function component<T extends TSchema> (id: string, schema: T) {
  const existing = registry.get(id)
  if (existing === undefined) registry.set(id, { ...schema, $id: id })
  return Type.Unsafe<Static<T>>(Type.Ref(id))
}

/** Every registered component, in registration order. */
export function components (): TSchema[] {
  return [...registry.values()]
}
