import type { ScimListQuery, ScimPatch, ScimUser, ScimUserInput } from '../../../schemas/scim.js'
import { Errors, rethrowServiceError, validationFailed } from '../../errors.js'
import { StoreConflict } from '../../store/errors.js'
import { uuidv7 } from '../../store/ids.js'
import { emailDomain, type OrganizationDomainsRepository } from '../../store/organization-domains.js'
import type { ScimResourcesRepository } from '../../store/scim.js'
import type { Db, ScimUsersTable } from '../../store/types.js'
import type { UsersRepository } from '../../store/users.js'
import type { AuditChange, AuditTrail } from '../audit/index.js'
import { directoryOf, type DirectoryStanding, type RequestContext } from '../context.js'
import { type AccountClaims, displayName } from '../sign-in/index.js'
import { scimBaseUrl } from './directories.js'
import { resourceTypes, schemas, serviceProviderConfig } from './discovery.js'
import { comparisonsOf, USER_FILTER_ATTRIBUTES } from './filter.js'
import { NO_CHANGE, type ScimMemberships } from './memberships.js'
import {
  listResponse, pageOf, patched, personOf, type ProvisionedPerson, resourceId, type ScimList, userView
} from './resources.js'

export interface ScimUserServiceDependencies {
  scimResources: ScimResourcesRepository
  users: UsersRepository
  organizationDomains: OrganizationDomainsRepository
  claims: AccountClaims
  memberships: ScimMemberships
  audit: AuditTrail
  publicUrl: string
  now?: () => number
}

/**
 * SCIM 2.0 Users of an organization's directory (docs/api.md, "SCIM provisioning"), and the
 * endpoint's discovery documents. A User is an account and, while active, its membership. The
 * rules are those of SSO: a directory speaks only for addresses of its organization's verified
 * domains, and provisioning an address claims its unclaimed account under the
 * account-claiming rule (docs/security.md). Deactivating or deleting a User ends the membership
 * and the organization's sessions and access tokens of that account at once; a deactivated
 * person joins the organization through no other door (SSO) until reactivated.
 */
export class ScimUserService {
  readonly #now: () => number

  constructor (private readonly deps: ScimUserServiceDependencies) {
    this.#now = deps.now ?? Date.now
  }

  #base (directory: DirectoryStanding): string {
    return scimBaseUrl(this.deps.publicUrl, directory.id)
  }

  #timestamp (): string {
    return new Date(this.#now()).toISOString()
  }

  serviceProviderConfig (context: RequestContext) {
    return serviceProviderConfig(this.#base(directoryOf(context)))
  }

  resourceTypes (context: RequestContext) {
    return resourceTypes(this.#base(directoryOf(context)))
  }

  schemas (context: RequestContext) {
    return schemas(this.#base(directoryOf(context)))
  }

  async listUsers (context: RequestContext, query: ScimListQuery): Promise<ScimList<ScimUser>> {
    const directory = directoryOf(context)
    const comparisons = comparisonsOf(query.filter, USER_FILTER_ATTRIBUTES)
    const { startIndex, offset, limit } = pageOf(query)
    const page = await this.deps.scimResources.listUsers(directory.id, comparisons, offset, limit)
    return listResponse(page.total, startIndex, page.rows.map((row) => userView(row, this.#base(directory))))
  }

  async getUser (context: RequestContext, id: string): Promise<ScimUser> {
    const directory = directoryOf(context)
    return userView(await this.#user(directory, id), this.#base(directory))
  }

  /**
   * Provisions a person: their account (found, claimed or made, the address vouched for by the
   * organization's verified domain), the directory's User, and, when active, the membership.
   */
  async createUser (context: RequestContext, input: ScimUserInput): Promise<ScimUser> {
    const directory = directoryOf(context)
    const person = personOf(input)
    const email = await this.#vouchedAddress(directory, person)
    // Before the account is made: a second POST of a person (an IdP's retry) changes nothing.
    if (await this.deps.scimResources.userNamed(directory.id, person.userName) !== undefined) rethrowServiceError(new StoreConflict('scim_user_exists'))
    const userId = await this.#account(context, directory, email, person.name)
    const now = this.#timestamp()
    const row: ScimUsersTable = {
      id: uuidv7(),
      directory_id: directory.id,
      user_id: userId,
      user_name: person.userName,
      external_id: person.externalId,
      active: person.active ? 1 : 0,
      resource: JSON.stringify(person.resource),
      created_at: now,
      updated_at: now
    }
    const outcome = await this.deps.audit.recordChange(context, async (trx) => {
      await this.deps.scimResources.insertUser(row, trx).catch(rethrowServiceError)
      // Provisioned inactive, an account that is a member already leaves.
      const { memberships } = this.deps
      const membership = person.active
        ? await memberships.join(directory, row, trx)
        : await memberships.leave(directory, userId, trx)
      return { ...membership, entries: [this.#userEntry('scim.user_created', directory, row), ...membership.entries] }
    }, (result) => result.entries)
    await outcome.revokeAccess()
    return userView(row, this.#base(directory))
  }

  async replaceUser (context: RequestContext, id: string, input: ScimUserInput): Promise<ScimUser> {
    return await this.#writeUser(context, id, () => input)
  }

  async patchUser (context: RequestContext, id: string, patch: ScimPatch): Promise<ScimUser> {
    const directory = directoryOf(context)
    return await this.#writeUser(context, id, (current) => patched('user', userView(current, this.#base(directory)), patch))
  }

  /** Removes the directory's User and the membership it gave; the account stays, with its other organizations. */
  async deleteUser (context: RequestContext, id: string): Promise<void> {
    const directory = directoryOf(context)
    const current = await this.#user(directory, id)
    const outcome = await this.deps.audit.recordChange(context, async (trx) => {
      const { memberships } = this.deps
      const membership = current.active === 1 ? await memberships.leave(directory, current.user_id, trx) : NO_CHANGE
      await this.deps.scimResources.removeUser(directory.id, current.id, trx)
      return { ...membership, entries: [this.#userEntry('scim.user_deleted', directory, current), ...membership.entries] }
    }, (result) => result.entries)
    await outcome.revokeAccess()
  }

  /**
   * A User written anew (PUT, or the result of a PATCH): its resource kept, the account's name
   * following it, and `active` deciding the membership. The account's address is not the
   * directory's to change (a sensitive change, docs/security.md): a new userName or e-mail is
   * kept on the User, and must still be an address of a verified domain while the User is
   * active (a deactivation is never refused for its address). The User's row is held from the
   * read of `inputOf` to the commit: writes of one User at once apply one after another.
   */
  async #writeUser (
    context: RequestContext, id: string, inputOf: (current: ScimUsersTable) => ScimUserInput
  ): Promise<ScimUser> {
    const directory = directoryOf(context)
    const { scimResources } = this.deps
    const resource = resourceId(id, 'User')
    // The account's own address must still be one the organization vouches for, as SAML sign-in
    // asks: one that moved elsewhere is not brought back nor renamed by this directory.
    const found = await scimResources.findUser(directory.id, resource)
    const accountVouched = found !== undefined && await this.#accountVouched(directory, found.user_id)
    const outcome = await this.deps.audit.recordChange(context, async (trx) => {
      const current = await scimResources.holdUser(directory.id, resource, trx)
      if (current === undefined) throw new Errors.NOT_FOUND('User')
      const person = personOf(inputOf(current))
      if (person.active && current.active === 0 && !accountVouched) {
        throw validationFailed([{ path: '/active', message: 'the account\'s address is no longer at one of the organization\'s verified domains' }])
      }
      const email = person.active ? await this.#vouchedAddress(directory, person, trx) : person.email ?? ''
      const changes = {
        user_name: person.userName,
        external_id: person.externalId,
        active: person.active ? 1 : 0,
        resource: JSON.stringify(person.resource),
        updated_at: this.#timestamp()
      }
      const next: ScimUsersTable = { ...current, ...changes }
      const wasActive = current.active === 1
      await scimResources.updateUser(directory.id, current.id, changes, trx).catch(rethrowServiceError)
      if (person.name !== null && accountVouched) {
        await this.deps.users.update(current.user_id, { name: displayName({ name: person.name }, email) }, trx)
      }
      const { memberships } = this.deps
      const membership = wasActive === person.active
        ? NO_CHANGE
        : person.active
          ? await memberships.join(directory, next, trx)
          : await memberships.leave(directory, current.user_id, trx)
      const event = wasActive === person.active ? 'scim.user_updated' : person.active ? 'scim.user_reactivated' : 'scim.user_deactivated'
      return { ...membership, next, entries: [this.#userEntry(event, directory, next), ...membership.entries] }
    }, (result) => result.entries)
    await outcome.revokeAccess()
    return userView(outcome.next, this.#base(directory))
  }

  async #user (directory: DirectoryStanding, id: string): Promise<ScimUsersTable> {
    const row = await this.deps.scimResources.findUser(directory.id, resourceId(id, 'User'))
    if (row === undefined) throw new Errors.NOT_FOUND('User')
    return row
  }

  /** The account's address of a User: an address of one of the organization's verified domains. */
  async #accountVouched (directory: DirectoryStanding, userId: string): Promise<boolean> {
    const account = await this.deps.users.findById(userId)
    if (account === undefined) return false
    return await this.deps.organizationDomains.isVerifiedFor(directory.organizationId, emailDomain(account.email))
  }

  async #vouchedAddress (directory: DirectoryStanding, person: ProvisionedPerson, trx?: Db): Promise<string> {
    if (person.email === null) throw validationFailed([{ path: '/userName', message: 'neither userName nor emails holds an e-mail address' }])
    if (!await this.deps.organizationDomains.isVerifiedFor(directory.organizationId, emailDomain(person.email), trx)) {
      throw validationFailed([{ path: '/emails', message: `${emailDomain(person.email)} is not one of the organization's verified domains` }])
    }
    return person.email
  }

  /**
   * The account an address of a verified domain stands for, under the account-claiming rule
   * (docs/security.md, "Account claiming"): a new one is made claimed (the organization vouches
   * for the address); an unclaimed one is claimed, everything attached before removed; a
   * claimed one is taken as it is, unless its address awaits verification after a change.
   */
  async #account (
    context: RequestContext, directory: DirectoryStanding, email: string, name: string | null
  ): Promise<string> {
    const { users, claims, audit } = this.deps
    const provider = `scim:${directory.id}`
    const existing = await users.findByEmail(email)
    if (existing === undefined) {
      const created = await audit.recordChange(context,
        async (trx) => await users.create({ email, name: displayName({ name }, email), passwordHash: null, roles: ['user'], emailVerified: true }, trx)
          .catch(rethrowServiceError),
        (user) => [{ event: 'user.created', outcome: 'success', targetId: user.id, details: { provider } }])
      return created.id
    }
    if ((await users.findPrincipal(existing.id))?.claimed === true) {
      if (!existing.email_verified) throw new Errors.CONFLICT('An account has this address, not yet verified after a change: it cannot be provisioned')
      return existing.id
    }
    const proved = await audit.recordChange(context,
      async (trx) => await claims.prove(existing.id, email, { removePassword: true }, trx),
      (result) => [
        { event: 'email.verified', outcome: 'success', targetId: existing.id, details: { provider } },
        ...result?.entries ?? []
      ])
    claims.deliver()
    await proved?.revokeAccess()
    return existing.id
  }

  #userEntry (
    event: 'scim.user_created' | 'scim.user_updated' | 'scim.user_deactivated' | 'scim.user_reactivated' | 'scim.user_deleted',
    directory: DirectoryStanding, user: ScimUsersTable
  ): AuditChange {
    return {
      event, outcome: 'success', targetId: user.user_id, details: { organization_id: directory.organizationId, directory_id: directory.id, scim_user_id: user.id }
    }
  }
}
