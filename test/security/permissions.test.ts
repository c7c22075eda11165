import t from 'tap'
import { PERMISSIONS, type Role } from '../../schemas/rbac.js'
import { effectiveRoles, hasPermission, permissionsOf } from '../../src/security/permissions.js'

const as = (roles: Role[], id = 'me') => ({ id, roles })

t.test('role permission sets follow the role table', async (t) => {
  t.same(permissionsOf(['anonymous']).sort(), ['read'])
  t.same(permissionsOf(['user']).sort(), ['create', 'delete', 'read', 'update', 'write'])
  t.same(permissionsOf(['moderator']).sort(), ['create', 'delete', 'manage_roles', 'read', 'update', 'write'])
  t.same(permissionsOf(['admin']).sort(),
    ['create', 'delete', 'manage_roles', 'manage_users', 'read', 'update', 'view_audit_logs', 'write'])
  t.same(permissionsOf(['super_admin']), ['admin'])
})

t.test('no roles means anonymous', async (t) => {
  t.same(effectiveRoles([]), ['anonymous'])
  t.same(permissionsOf([]), ['read'])
  t.equal(hasPermission(as([]), 'read'), true)
  t.equal(hasPermission(as([]), 'create'), false)
})

t.test('several roles are a union', async (t) => {
  t.equal(hasPermission(as(['user']), 'manage_roles'), false)
  t.equal(hasPermission(as(['user', 'moderator']), 'manage_roles'), true)
})

t.test('the admin permission passes every check', async (t) => {
  for (const permission of PERMISSIONS) {
    t.equal(hasPermission(as(['super_admin']), permission, 'someone-else'), true, permission)
  }
  t.equal(hasPermission(as(['admin']), 'admin'), false, 'the admin role does not hold the admin permission')
})

t.test('owners may read, write and delete their own resources', async (t) => {
  for (const permission of ['read', 'write', 'delete'] as const) {
    t.equal(hasPermission(as([]), permission, 'me'), true, `anonymous owner: ${permission}`)
  }
  t.equal(hasPermission(as([]), 'update', 'me'), false, 'update is not an owner permission')
  t.equal(hasPermission(as([]), 'manage_users', 'me'), false)
})

t.test('a user\'s write/delete reach only its own resources (departure 2)', async (t) => {
  t.equal(hasPermission(as(['user']), 'delete', 'someone-else'), false)
  t.equal(hasPermission(as(['user']), 'write', 'someone-else'), false)
  t.equal(hasPermission(as(['user']), 'update', 'someone-else'), false)
  t.equal(hasPermission(as(['user']), 'update', 'me'), true)
  t.equal(hasPermission(as(['user']), 'create'), true, 'creating has no owner')
  t.equal(hasPermission(as(['user']), 'read', 'someone-else'), true, 'read is global')
  t.equal(hasPermission(as(['moderator']), 'delete', 'someone-else'), true, 'moderators hold delete globally')
  t.equal(hasPermission(as(['admin']), 'write', 'someone-else'), true)
})

t.test('permissions outside the set fail', async (t) => {
  t.equal(hasPermission(as(['moderator']), 'manage_users'), false)
  t.equal(hasPermission(as(['moderator']), 'view_audit_logs'), false)
  t.equal(hasPermission(as(['admin']), 'manage_users'), true)
})
