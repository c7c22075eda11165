import type { Permission } from '../../schemas/rbac.js'
import { Errors } from '../errors.js'
import { hasPermission } from '../security/permissions.js'
import type { Caller } from './context.js'

/**
 * The caller, when it holds `permission` (on a resource of `ownerId`, when given); throws
 * `Authentication required` without a caller, `Permission denied. Requires: <permission>` without it.
 */
export function authorize (caller: Caller | null, permission: Permission, ownerId?: string): Caller {
  if (caller === null) throw new Errors.AUTHENTICATION_REQUIRED()
  if (!hasPermission(caller, permission, ownerId)) throw new Errors.FORBIDDEN(permission)
  return caller
}
