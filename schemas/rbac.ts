import { Type } from '@sinclair/typebox'
import { DataEnvelope, IdSchema } from './common.js'

/** Roles and permissions (docs/api.md, "Roles and permissions"). */
export const ROLES = ['anonymous', 'user', 'moderator', 'admin', 'super_admin'] as const
export type Role = typeof ROLES[number]

export const PERMISSIONS = [
  'read', 'write', 'delete', 'admin', 'create', 'update', 'manage_users', 'manage_roles', 'view_audit_logs',
  // Held by no role of the table: super_admin holds it through `admin` (docs/api.md, "Impersonation").
  'impersonate_users'
] as const
export type Permission = typeof PERMISSIONS[number]

export const RoleSchema = Type.Unsafe<Role>(Type.String({ enum: [...ROLES], title: 'Role' }))
export const PermissionSchema = Type.Unsafe<Permission>(Type.String({ enum: [...PERMISSIONS], title: 'Permission' }))

/** Roles that can be assigned (`anonymous` is what holding none means). */
export const ASSIGNABLE_ROLES = ROLES.filter((role) => role !== 'anonymous')

export const RoleParamsSchema = Type.Object({
  id: IdSchema,
  role: Type.Unsafe<Role>(Type.String({ enum: [...ASSIGNABLE_ROLES], examples: ['moderator'] }))
}, { additionalProperties: false })

/** A user's roles and the permissions they add up to (docs/api.md, "Roles and permissions"). */
export const RoleAssignmentSchema = Type.Object({
  roles: Type.Array(RoleSchema),
  permissions: Type.Array(PermissionSchema)
}, { title: 'RoleAssignment' })

/** Named response envelopes (components of the OpenAPI document). */
export const RoleAssignmentResponseSchema = DataEnvelope(RoleAssignmentSchema)
