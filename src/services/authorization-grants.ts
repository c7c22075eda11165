import type { AuthorizationGrant } from '../../schemas/authorization-grants.js'
import { Errors } from '../errors.js'
import type { AuthorizationArtifactsRepository } from '../store/authorization-artifacts.js'
import type { OAuthClientsTable } from '../store/types.js'
import type { AuditTrail } from './audit/trail.js'
import { callerOf, type RequestContext } from './context.js'

export interface AuthorizationGrantDependencies {
  artifacts: Pick<AuthorizationArtifactsRepository, 'grantsOf' | 'revokeGrant'>
  clients: { findById: (id: string) => Promise<OAuthClientsTable | undefined> }
  audit: AuditTrail
  now?: () => number
}

/** What oidc-provider keeps in a grant's payload that a person is shown. */
interface GrantPayload { iat?: number, exp?: number, openid?: { scope?: string } }

const isoOf = (seconds: number | undefined) => seconds === undefined ? null : new Date(seconds * 1000).toISOString()

/**
 * The consents a person gave applications at the authorization server (docs/api.md,
 * "Authorization server"): listed, and revoked, which ends every token they gave.
 */
export class AuthorizationGrantService {
  readonly #now: () => number
  constructor (private readonly deps: AuthorizationGrantDependencies) {
    this.#now = deps.now ?? Date.now
  }

  async list (context: RequestContext): Promise<AuthorizationGrant[]> {
    const grants = await this.deps.artifacts.grantsOf(callerOf(context).id, new Date(this.#now()).toISOString())
    return await Promise.all(grants.map(async (grant) => {
      const payload = JSON.parse(grant.payload) as GrantPayload
      const client = await this.deps.clients.findById(grant.clientId)
      return {
        id: grant.id,
        client_id: grant.clientId,
        client_name: client?.name ?? '',
        scopes: (payload.openid?.scope ?? '').split(' ').filter((scope) => scope !== ''),
        granted_at: isoOf(payload.iat) ?? new Date(0).toISOString(),
        expires_at: isoOf(payload.exp)
      }
    }))
  }

  /** Ends the consent and every code and token it gave; the application must ask again. */
  async revoke (context: RequestContext, grantId: string): Promise<void> {
    const userId = callerOf(context).id
    if (!await this.deps.artifacts.revokeGrant(userId, grantId)) throw new Errors.NOT_FOUND('Consent')
    await this.deps.audit.recordIn(context, 'authorization_grant.revoked', { outcome: 'success', actorId: userId, targetId: userId, details: { grant_id: grantId } })
  }
}
