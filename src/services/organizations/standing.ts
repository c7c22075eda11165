import type { OrganizationRole } from '../../../schemas/organizations.js'
import { Errors } from '../../errors.js'
import { actingRole, standingOf } from '../../security/organization-permissions.js'
import type { OrganizationsRepository } from '../../store/organizations.js'
import { callerOf, type RequestContext } from '../context.js'

/**
 * The role the caller acts with in the organization (a super_admin acts as an owner): the
 * standing its route's guard read (RequestContext.organization), read here only for a call that
 * came without one, so that the rule holds for every caller of the service.
 */
export async function actingRoleIn (
  context: RequestContext,
  organizationId: string,
  organizations: Pick<OrganizationsRepository, 'roleOf'>
): Promise<OrganizationRole> {
  const caller = callerOf(context)
  const standing = context.organization
  const role = standing?.id === organizationId
    ? standing.role
    : actingRole(standingOf(caller, await organizations.roleOf(organizationId, caller.id)))
  // The access declaration admitted only callers who act with a role here.
  if (role === null) throw new Errors.NOT_FOUND('Organization')
  return role
}
