import t from 'tap'
import {
  ORGANIZATION_PERMISSIONS, ORGANIZATION_ROLES, type OrganizationPermission, type OrganizationRole
} from '../../schemas/organizations.js'
import type { Role } from '../../schemas/rbac.js'
import {
  actingRole, decide, mayGrant, mayManage, organizationPermissionsOf, rankOf, type Standing, standingOf
} from '../../src/security/organization-permissions.js'

const as = (roles: Role[]) => ({ id: 'caller', roles })

/** The table of the design (docs/api.md, "Organizations"). */
const TABLE: Record<OrganizationRole, OrganizationPermission[]> = {
  owner: ['org:read', 'org:update', 'org:delete', 'members:read', 'members:invite', 'members:update', 'members:remove', 'sso:manage'],
  admin: ['org:read', 'org:update', 'members:read', 'members:invite', 'members:update', 'members:remove'],
  member: ['org:read', 'members:read']
}

t.test('the permission table of each role', async (t) => {
  t.same([...ORGANIZATION_PERMISSIONS].sort(), [...TABLE.owner].sort(), 'eight permissions, all the owner\'s')
  for (const role of ORGANIZATION_ROLES) {
    t.same([...organizationPermissionsOf(role)].sort(), [...TABLE[role]].sort(), role)
    for (const permission of ORGANIZATION_PERMISSIONS) {
      const expected = TABLE[role].includes(permission) ? 'granted' : 'refused'
      t.equal(decide({ kind: 'member', role }, permission), expected, `${role} ${permission}: ${expected}`)
    }
  }
  t.notOk(organizationPermissionsOf('admin').includes('org:delete'), 'only an owner deletes the organization')
  t.notOk(organizationPermissionsOf('admin').includes('sso:manage'), 'only an owner changes how its people sign in')
})

t.test('the rank order is member < admin < owner, and a higher role holds every permission of a lower one', async (t) => {
  t.ok(rankOf('member') < rankOf('admin'), 'member below admin')
  t.ok(rankOf('admin') < rankOf('owner'), 'admin below owner')
  t.same([...ORGANIZATION_ROLES].sort((a, b) => rankOf(a) - rankOf(b)), ['member', 'admin', 'owner'])
  for (const lower of ORGANIZATION_ROLES) {
    for (const higher of ORGANIZATION_ROLES.filter((role) => rankOf(role) > rankOf(lower))) {
      for (const permission of organizationPermissionsOf(lower)) {
        t.ok(organizationPermissionsOf(higher).includes(permission), `${higher} holds ${lower}'s ${permission}`)
      }
    }
  }
})

t.test('a member lacking a permission is refused (403), an outsider never learns the organization exists (404)', async (t) => {
  for (const roles of [[], ['user'], ['moderator'], ['user', 'moderator']] as Role[][]) {
    const standing = standingOf(as(roles), undefined)
    t.same(standing, { kind: 'none' }, `global ${JSON.stringify(roles)}, no membership: no standing`)
    t.equal(actingRole(standing), null)
    for (const permission of ORGANIZATION_PERMISSIONS) {
      t.equal(decide(standing, permission), 'hidden', `${JSON.stringify(roles)} ${permission}: hidden, never refused`)
    }
  }
  const member = standingOf(as(['user']), 'member')
  t.same(member, { kind: 'member', role: 'member' })
  t.equal(decide(member, 'members:invite'), 'refused', 'a member who may see the organization is refused, not hidden')
  t.equal(decide(member, 'org:read'), 'granted')
  t.equal(actingRole(member), 'member')
})

t.test('a global super_admin acts as an owner of every organization', async (t) => {
  for (const membership of [undefined, 'member', 'admin', 'owner'] as const) {
    const standing = standingOf(as(['super_admin']), membership)
    t.equal(actingRole(standing), 'owner', `membership ${String(membership)}: acts as owner`)
    for (const permission of ORGANIZATION_PERMISSIONS) {
      t.equal(decide(standing, permission), 'granted', `membership ${String(membership)}: ${permission}`)
    }
  }
  t.same(standingOf(as(['super_admin']), undefined), { kind: 'super_admin', role: 'owner' },
    'not a member: the standing says super_admin, which the service audits')
  t.same(standingOf(as(['user', 'super_admin']), 'member'), { kind: 'super_admin', role: 'owner' },
    'a plain member who is super_admin acts with the larger right')
})

t.test('a global admin (manage_users) reads every organization and its members, and changes nothing of it', async (t) => {
  const standing = standingOf(as(['admin']), undefined)
  t.same(standing, { kind: 'global_reader' })
  t.equal(actingRole(standing), null, 'no role to act with: the Organization shows role null')
  for (const permission of ORGANIZATION_PERMISSIONS) {
    const expected = ['org:read', 'members:read'].includes(permission) ? 'granted' : 'refused'
    t.equal(decide(standing, permission), expected, `${permission}: ${expected}`)
  }
  const alsoAdminMember = standingOf(as(['admin']), 'admin')
  t.same(alsoAdminMember, { kind: 'member', role: 'admin' }, 'a global admin who is a member acts with the membership')
  t.equal(decide(alsoAdminMember, 'members:invite'), 'granted')
  t.equal(decide(alsoAdminMember, 'org:delete'), 'refused')
  t.equal(decide(standingOf(as(['admin']), 'member'), 'org:read'), 'granted')
  t.equal(decide(standingOf(as(['admin']), 'member'), 'org:update'), 'refused',
    'the global reader right adds nothing to a member\'s')
})

t.test('nobody grants a role above their own, nor changes or removes one who ranks above them', async (t) => {
  const grants: Array<[OrganizationRole, OrganizationRole, boolean]> = [
    ['owner', 'owner', true], ['owner', 'admin', true], ['owner', 'member', true],
    ['admin', 'owner', false], ['admin', 'admin', true], ['admin', 'member', true],
    ['member', 'owner', false], ['member', 'admin', false], ['member', 'member', true]
  ]
  for (const [actor, role, allowed] of grants) {
    t.equal(mayGrant(actor, role), allowed, `${actor} grants ${role}: ${String(allowed)}`)
    t.equal(mayManage(actor, role), allowed, `${actor} changes or removes a ${role}: ${String(allowed)}`)
  }
  // Whatever the standing, the role acted with grants nothing above itself.
  const standings: Standing[] = [
    ...ORGANIZATION_ROLES.map((role) => standingOf(as(['user']), role)),
    standingOf(as(['super_admin']), undefined)
  ]
  for (const standing of standings) {
    const acting = actingRole(standing)
    if (acting === null) throw new Error('a member or super_admin acts with a role')
    for (const role of ORGANIZATION_ROLES) {
      t.equal(mayGrant(acting, role), rankOf(role) <= rankOf(acting), `${JSON.stringify(standing)} grants ${role}`)
    }
  }
})
