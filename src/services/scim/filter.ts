import { type Filter, parse } from 'scim2-parse-filter'
import { validationFailed } from '../../errors.js'
import type { ScimComparison } from '../../store/scim.js'

/** The attributes a filter may compare, by their name in lower case, to the column holding them. */
export const USER_FILTER_ATTRIBUTES = { username: 'user_name', externalid: 'external_id', id: 'id' } as const
export const GROUP_FILTER_ATTRIBUTES = { displayname: 'display_name', externalid: 'external_id', id: 'id' } as const

type Attributes = Record<string, ScimComparison['column']>

/** An attribute path without its schema URN (`urn:…:User:userName` is `userName`), in lower case. */
function attributeName (path: string): string {
  return (path.startsWith('urn:') ? path.slice(path.lastIndexOf(':') + 1) : path).toLowerCase()
}

function refused (message: string): Error {
  return validationFailed([{ path: '/filter', message }])
}

function comparisonsIn (filter: Filter, attributes: Attributes): ScimComparison[] {
  if (filter.op === 'and' && 'filters' in filter) return filter.filters.flatMap((part) => comparisonsIn(part, attributes))
  if (filter.op !== 'eq' && filter.op !== 'co' && filter.op !== 'sw') {
    throw refused(`the operator ${filter.op} is not supported: eq, co, sw, and \`and\` of them`)
  }
  if (!('attrPath' in filter) || !('compValue' in filter)) throw refused('is not a comparison')
  const name = attributeName(filter.attrPath)
  const column = Object.hasOwn(attributes, name) ? attributes[name] : undefined
  if (column === undefined) throw refused(`${filter.attrPath} cannot be filtered on: ${Object.keys(attributes).join(', ')} can (any case)`)
  if (typeof filter.compValue !== 'string') throw refused(`${filter.attrPath} is compared with a string`)
  return [{ column, op: filter.op, value: filter.compValue }]
}

/**
 * A SCIM filter (RFC 7644 §3.4.2.2), parsed by scim2-parse-filter, as the comparisons the
 * store makes (their `and`): what identity providers send (`userName eq "…"`, `externalId eq
 * "…"`, `displayName eq "…"`) and `co`/`sw`; anything else is refused as invalidFilter.
 */
export function comparisonsOf (filter: string | undefined, attributes: Attributes): ScimComparison[] {
  if (filter === undefined || filter.trim() === '') return []
  let parsed: Filter
  try {
    parsed = parse(filter)
  } catch {
    throw refused('is not a SCIM filter')
  }
  return comparisonsIn(parsed, attributes)
}
