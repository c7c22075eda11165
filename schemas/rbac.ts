import { Type } from '@sinclair/typebox'

/** Spec 2.9. */
export const ROLES = ['anonymous', 'user', 'moderator', 'admin', 'super_admin'] as const
export type Role = typeof ROLES[number]

export const PERMISSIONS = [
  'read', 'write', 'delete', 'admin', 'create', 'update', 'manage_users', 'manage_roles', 'view_audit_logs'
] as const
export type Permission = typeof PERMISSIONS[number]

export const RoleSchema = Type.Unsafe<Role>(Type.String({ enum: [...ROLES], title: 'Role' }))
export const PermissionSchema = Type.Unsafe<Permission>(Type.String({ enum: [...PERMISSIONS], title: 'Permission' }))
