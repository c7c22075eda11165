/**
 * What the SCIM tests share: an organization with a verified domain and a SCIM directory, the
 * identity provider's requests to it (through `app.inject`, in SCIM's media type), and accounts
 * at the organization's domain.
 */
import type { LightMyRequestResponse } from 'fastify'
import { SCIM } from '../../schemas/scim.js'
import { type Account, withToken } from './accounts.js'
import { TEST_PASSWORD } from './accounts.js'
import type { Method } from './organizations.js'
import { SsoHarness, uniqueDomain } from './sso.js'

export type ScimMethod = Method | 'PUT'

export interface Directory { id: string, token: string, base_url: string }

/** A PatchOp body of `operations`. */
export const patchOp = (...Operations: object[]) => ({ schemas: [SCIM.patchOp], Operations })

let personCounter = 0

export class ScimHarness extends SsoHarness {
  /**
   * A team (owner, admin, member) whose organization holds a verified domain and a SCIM
   * directory mapping groups as given.
   */
  async provisioned (roleMapping: Record<string, string> = { 'Acme Admins': 'admin' }) {
    const team = await this.team('Acme')
    const domain = uniqueDomain('scim')
    await this.verifiedDomain(team.owner, team.organization.id, domain)
    const created = await this.call(team.owner, 'POST', `/organizations/${team.organization.id}/scim-directories`, {
      name: 'Acme directory', role_mapping: roleMapping
    })
    if (created.statusCode !== 201) throw new Error(`directory not created: ${created.body}`)
    const directory: Directory = created.json().data
    return { ...team, domain, directory }
  }

  /** A request of the identity provider to the directory's SCIM endpoint. */
  async scim (
    directory: Directory | { id: string, token: string }, method: ScimMethod, path: string, payload?: object,
    contentType = 'application/scim+json'
  ): Promise<LightMyRequestResponse> {
    return await this.app.inject(withToken(directory.token, {
      method,
      url: `/scim/v2/directories/${directory.id}${path}`,
      ...(payload !== undefined && { payload: JSON.stringify(payload), headers: { 'content-type': contentType } })
    }))
  }

  /** A new address at `domain`. */
  static address (domain: string, prefix = 'person'): string {
    return `${prefix}-${process.pid}-${personCounter++}@${domain}`
  }

  /** An account registered with a password at `address`, its address proved unless `verified` is false. */
  async accountAt (address: string, verified = true): Promise<Account> {
    const created = await this.app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: address, name: 'Registered First', password: TEST_PASSWORD } })
    if (created.statusCode !== 201) throw new Error(`registration failed: ${created.body}`)
    const { id } = created.json().data
    if (verified) await this.app.repositories.users.markEmailVerified(id, address)
    const login = await this.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: address, password: TEST_PASSWORD } })
    if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
    return { id, email: address, password: TEST_PASSWORD, token: login.json().data.access_token }
  }

  /** The account's role in the organization, or undefined when it is no member. */
  async roleOf (organizationId: string, userId: string) {
    return await this.app.repositories.organizations.roleOf(organizationId, userId)
  }
}
