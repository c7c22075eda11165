import { TypeCompiler } from '@sinclair/typebox/compiler'
import { scimPatch, ScimError as PatchError, type ScimPatchOperation } from 'scim-patch'
import {
  SCIM, SCIM_MAX_COUNT, type ScimGroup, type ScimGroupInput, ScimGroupInputSchema, type ScimListQuery, type ScimPatch,
  type ScimUser, type ScimUserInput, ScimUserInputSchema
} from '../../../schemas/scim.js'
import { Errors, validationFailed } from '../../errors.js'
import { isUserEmail, usableName } from '../../federation/providers.js'
import { canonicalUuid, isUuid } from '../../store/ids.js'
import type { GroupMember } from '../../store/scim.js'
import type { ScimGroupsTable, ScimUsersTable } from '../../store/types.js'

/** SCIM booleans as sent: true and false, or Entra ID's "True" and "False". */
export function scimBoolean (value: unknown, absent: boolean): boolean {
  if (typeof value === 'boolean') return value
  if (typeof value === 'string') return value.toLowerCase() === 'true'
  return absent
}

/** What the service takes from a User: the account's address and name, and the resource to keep. */
export interface ProvisionedPerson {
  /** userName in lower case: SCIM compares it ignoring case. */
  userName: string
  externalId: string | null
  active: boolean
  /**
   * The account's address: the primary (else the work, else the first) e-mail, else userName;
   * null when none is an address.
   */
  email: string | null
  name: string | null
  /** The resource as written, without `password`, `id` and `meta` (the service's own). */
  resource: Record<string, unknown>
}

type MultiValue = NonNullable<ScimUserInput['emails']>[number]

function addressOf (input: ScimUserInput): string | null {
  const emails: MultiValue[] = input.emails ?? []
  const chosen = emails.find((email) => scimBoolean(email.primary, false)) ??
    emails.find((email) => email.type?.toLowerCase() === 'work') ?? emails[0]
  const address = (chosen?.value ?? input.userName).trim().toLowerCase()
  return isUserEmail(address) ? address : null
}

/** The account's name, as a provider's is kept (control characters out, docs/security.md). */
function nameOf (input: ScimUserInput): string | null {
  const parts = [input.name?.givenName, input.name?.familyName].filter((part) => part !== undefined && part.trim() !== '')
  const name = [input.displayName, input.name?.formatted, parts.join(' ')]
    .map(usableName).find((candidate) => candidate !== null)
  return name ?? null
}

export function personOf (input: ScimUserInput): ProvisionedPerson {
  // SCIM's attribute names ignore case: `Password` is a password too, and so is dropped.
  const rest = Object.fromEntries(Object.entries(input).filter(([name]) => !/^(password|id|meta)$/i.test(name)))
  const active = scimBoolean(input.active, true)
  return {
    userName: input.userName.trim().toLowerCase(),
    externalId: input.externalId ?? null,
    active,
    email: addressOf(input),
    name: nameOf(input),
    resource: { ...rest, schemas: input.schemas ?? [SCIM.user], active }
  }
}

const meta = (resourceType: 'User' | 'Group', row: { id: string, created_at: string, updated_at: string }, base: string) => ({
  resourceType, created: row.created_at, lastModified: row.updated_at, location: `${base}/${resourceType}s/${row.id}`
})

/** A User as the service answers it: what the directory wrote, with the service's id, `active` and `meta`. */
export function userView (row: ScimUsersTable, base: string): ScimUser {
  const resource = JSON.parse(row.resource) as Record<string, unknown>
  return {
    ...resource,
    schemas: Array.isArray(resource.schemas) ? resource.schemas as string[] : [SCIM.user],
    id: row.id,
    userName: typeof resource.userName === 'string' ? resource.userName : row.user_name,
    active: row.active === 1,
    meta: meta('User', row, base)
  }
}

/** startIndex and count (RFC 7644 §3.4.2.4) as an offset and a limit, count capped at SCIM_MAX_COUNT. */
export function pageOf (query: ScimListQuery) {
  const startIndex = Math.max(query.startIndex ?? 1, 1)
  const count = Math.max(query.count ?? SCIM_MAX_COUNT, 0)
  return { startIndex, offset: startIndex - 1, limit: Math.min(count, SCIM_MAX_COUNT) }
}

/** A resource id of the path: anything but one of the service's ids is a resource not found. */
export function resourceId (id: string, what: 'User' | 'Group'): string {
  if (!isUuid(canonicalUuid(id))) throw new Errors.NOT_FOUND(what)
  return canonicalUuid(id)
}

export type ScimList<T> = ReturnType<typeof listResponse<T>>

/** A ListResponse (RFC 7644 §3.4.2): a page of `total` resources from `startIndex` (1-based). */
export function listResponse<T> (total: number, startIndex: number, resources: T[]) {
  return {
    schemas: [SCIM.listResponse], totalResults: total, startIndex, itemsPerPage: resources.length, Resources: resources
  }
}

/** A Group as the service answers it; its members left out when asked (`excludedAttributes=members`). */
export function groupView (row: ScimGroupsTable, members: GroupMember[] | null, base: string): ScimGroup {
  return {
    schemas: [SCIM.group],
    id: row.id,
    displayName: row.display_name,
    ...(row.external_id !== null && { externalId: row.external_id }),
    ...(members !== null && {
      members: members.map((member) => ({ value: member.scim_user_id, display: member.user_name }))
    }),
    meta: meta('Group', row, base)
  }
}

const checks = { user: TypeCompiler.Compile(ScimUserInputSchema), group: TypeCompiler.Compile(ScimGroupInputSchema) }

/**
 * A resource with a PATCH's operations applied (RFC 7644 §3.5.2, by scim-patch), checked as a
 * PUT of it would be; an operation that cannot apply is invalidValue, its words in the detail.
 */
/**
 * The names objects, arrays, strings, numbers and booleans inherit. scim-patch follows a path or
 * a key into whatever property it names, inherited ones included (`toString.x` sets `x` on
 * Object.prototype.toString, `{"hasOwnProperty.call": 1}` replaces what every object's
 * hasOwnProperty calls, and the process fails at its next request): no such name may appear.
 */
const INHERITED_NAMES = new Set([
  ...[Object.prototype, Array.prototype, String.prototype, Number.prototype, Boolean.prototype]
    .flatMap((prototype) => Object.getOwnPropertyNames(prototype)),
  '__proto__', 'prototype'
])

/** Whether a path or key names an inherited property at any step (quoted filter values aside). */
function leavesResource (name: string): boolean {
  return name.replace(/"(?:[^"\\]|\\.)*"/g, '""').split(/[^\w$]+/).some((step) => INHERITED_NAMES.has(step))
}

function keysLeaveResource (value: unknown): boolean {
  if (Array.isArray(value)) return value.some(keysLeaveResource)
  if (typeof value !== 'object' || value === null) return false
  return Object.entries(value).some(([key, item]) => leavesResource(key) || keysLeaveResource(item))
}

type ScimResource = Parameters<typeof scimPatch>[0]
/** Members removed by value: the ids of the entries to drop. */
interface MemberRemoval { members: Set<string> }
/** The steps of a PATCH: runs of operations scim-patch applies, and removals of members by value. */
type PatchStep = ScimPatchOperation[] | MemberRemoval

/**
 * The operations as they are applied, in order. Entra ID removes a group's members by value
 * (`{ "op": "Remove", "path": "members", "value": [{ "value": "<id>" }] }`), which scim-patch
 * matches only to entries equal in every attribute, and one by one: such a removal drops the
 * entries with those ids in one pass over the members (a removal per entry, as before, cost
 * members × entries, seconds for a large group).
 */
function stepsOf (patch: ScimPatch): PatchStep[] {
  const steps: PatchStep[] = []
  for (const operation of patch.Operations) {
    const { op, path, value } = operation
    if (leavesResource(path ?? '') || keysLeaveResource(value)) {
      throw validationFailed([{ path: '/Operations', message: 'names a property every object inherits (__proto__, constructor, toString, …)' }])
    }
    if (op.toLowerCase() === 'remove' && path?.toLowerCase() === 'members' && Array.isArray(value)) {
      const members = new Set(value.map((member: unknown) => {
        const id = typeof member === 'object' && member !== null ? (member as { value?: unknown }).value : undefined
        if (typeof id !== 'string') throw validationFailed([{ path: '/Operations', message: 'a member to remove has no value' }])
        return id
      }))
      steps.push({ members })
      continue
    }
    const last = steps.at(-1)
    if (Array.isArray(last)) last.push(operation as ScimPatchOperation)
    else steps.push([operation as ScimPatchOperation])
  }
  return steps
}

function withoutMembers (resource: Record<string, unknown>, { members }: MemberRemoval): Record<string, unknown> {
  if (!Array.isArray(resource.members)) return resource
  const kept = resource.members.filter((member: unknown) =>
    typeof member !== 'object' || member === null || !members.has(String((member as { value?: unknown }).value)))
  return { ...resource, members: kept }
}

export function patched<K extends keyof typeof checks> (
  kind: K, current: ScimUser | ScimGroup, patch: ScimPatch
): K extends 'user' ? ScimUserInput : ScimGroupInput {
  const steps = stepsOf(patch)
  let result: Record<string, unknown>
  try {
    result = {
      ...current, meta: { created: new Date(current.meta.created), lastModified: new Date(current.meta.lastModified) }
    }
    const options = { mutateDocument: false, treatMissingAsAdd: true }
    for (const step of steps) {
      result = Array.isArray(step)
        ? scimPatch(result as unknown as ScimResource, step, options) as unknown as Record<string, unknown>
        : withoutMembers(result, step)
    }
  } catch (error) {
    // scim-patch's own refusals, and what it throws on values it does not expect (null where an
    // object was): either way the operations do not apply to this resource.
    const message = error instanceof PatchError ? error.message : 'the operations do not apply to this resource'
    throw validationFailed([{ path: '/Operations', message: message.slice(0, 300) }])
  }
  const { id: _id, meta: _meta, ...written } = result
  const check = checks[kind]
  if (!check.Check(written)) {
    const first = check.Errors(written).First()
    throw validationFailed([{ path: first?.path ?? '', message: `after the operations, ${first?.message ?? 'the resource is invalid'}` }])
  }
  return written as K extends 'user' ? ScimUserInput : ScimGroupInput
}
