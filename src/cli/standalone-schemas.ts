import { components } from '../../schemas/components.js'
import { withoutCanonicalMarks } from '../http/validation.js'

function referencesIn (value: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) referencesIn(item, found)
  else if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string') found.add(item)
      else referencesIn(item, found)
    }
  }
  return found
}

/** A discriminator's mapping names components as the OpenAPI document places them. */
const COMPONENT_PREFIX = '#/components/schemas/'

function isStringRecord (value: unknown): value is Record<string, string> {
  return typeof value === 'object' && value !== null && Object.values(value).every((item) => typeof item === 'string')
}

function rewriteReferences (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteReferences)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value)
    .filter(([key]) => key !== '$id')
    .map(([key, item]) => {
      if (key === '$ref' && typeof item === 'string') return [key, `#/$defs/${item}`]
      if (key === 'mapping' && isStringRecord(item)) return [key, Object.fromEntries(Object.entries(item).map(([name, target]) => [name, target.replace(COMPONENT_PREFIX, '#/$defs/')]))]
      return [key, rewriteReferences(item)]
    }))
}

/**
 * Each named schema as a standalone JSON Schema (2020-12): the components it refers to,
 * transitively, travel along under `$defs`.
 */
export function standaloneSchemas (): Record<string, Record<string, unknown>> {
  const byId = new Map(components().map((schema) => [String(schema.$id), schema]))
  const result: Record<string, Record<string, unknown>> = {}
  for (const [id, schema] of byId) {
    const needed = new Set<string>()
    const pending = [...referencesIn(schema, new Set())]
    while (pending.length > 0) {
      const next = pending.pop() ?? ''
      if (needed.has(next)) continue
      needed.add(next)
      pending.push(...referencesIn(byId.get(next), new Set()))
    }
    const published = (named: unknown) => rewriteReferences(withoutCanonicalMarks(named))
    const defs = Object.fromEntries([...needed].map((name) => [name, published(byId.get(name))]))
    result[id] = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: id,
      ...(published(schema) as Record<string, unknown>),
      ...(needed.size > 0 && { $defs: defs })
    }
  }
  return result
}
