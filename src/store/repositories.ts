import type { CursorCodec } from '../collection/cursor.js'
import { AccountErasureRepository } from './account-erasure.js'
import { ApiKeysRepository } from './api-keys.js'
import { AuditLogsRepository } from './audit-logs.js'
import type { Database } from './database.js'
import { DevicesRepository } from './devices.js'
import { IdentitiesRepository } from './identities.js'
import { InvitationsRepository } from './invitations.js'
import { AuthorizationArtifactsRepository } from './authorization-artifacts.js'
import { AuthorizationServerKeysRepository } from './authorization-server-keys.js'
import { ImpersonationsRepository } from './impersonations.js'
import { MfaRepository } from './mfa.js'
import { OAuthClientsRepository } from './oauth-clients.js'
import { OneTimeTokensRepository } from './one-time-tokens.js'
import { EmailSignInsRepository } from './email-sign-ins.js'
import { OrganizationDomainsRepository } from './organization-domains.js'
import { OrganizationsRepository } from './organizations.js'
import { ScimDirectoriesRepository, ScimResourcesRepository } from './scim.js'
import { SsoConnectionsRepository } from './sso-connections.js'
import { OutboxRepository } from './outbox.js'
import type { PageStore } from './paginate.js'
import { PasskeysRepository } from './passkeys.js'
import { CommentsRepository, PostsRepository } from './posts.js'
import { RevocationsRepository } from './revocations.js'
import { SealedSecretsRepository } from './sealed-secrets.js'
import { SessionsRepository } from './sessions.js'
import { SignInFailuresRepository } from './sign-in-failures.js'
import { UsersRepository } from './users.js'
import { WebhooksRepository } from './webhooks.js'

export type Repositories = ReturnType<typeof createRepositories>

/**
 * The data layer over one database: the only code that builds SQL. Filtered collections count
 * up to `countLimit` matches (COLLECTION_COUNT_LIMIT).
 */
export function createRepositories (
  { db, dialect, readRows }: Pick<Database, 'db' | 'dialect' | 'readRows'>,
  { cursors, countLimit }: { cursors: CursorCodec, countLimit: number }
) {
  const pages: PageStore = { db, dialect, cursors, read: readRows, countLimit }
  const users = new UsersRepository(db, readRows, pages)
  const outbox = new OutboxRepository(db)
  const organizations = new OrganizationsRepository(db, pages)
  const authorizationArtifacts = new AuthorizationArtifactsRepository(db)
  return {
    users,
    outbox,
    oneTimeTokens: new OneTimeTokensRepository(db, outbox),
    emailSignIns: new EmailSignInsRepository(db, outbox, dialect),
    sessions: new SessionsRepository(db, pages),
    revocations: new RevocationsRepository(db),
    impersonations: new ImpersonationsRepository(db),
    signInFailures: new SignInFailuresRepository(db, readRows),
    auditLogs: new AuditLogsRepository(db, pages),
    accountErasure: new AccountErasureRepository(db, authorizationArtifacts),
    devices: new DevicesRepository(db, pages),
    mfa: new MfaRepository(db, (userId) => users.invalidate(userId)),
    identities: new IdentitiesRepository(db),
    passkeys: new PasskeysRepository(db, pages, (userId) => users.invalidate(userId)),
    posts: new PostsRepository(db, pages),
    comments: new CommentsRepository(db, pages),
    organizations,
    invitations: new InvitationsRepository(db, pages, outbox, organizations),
    organizationDomains: new OrganizationDomainsRepository(db, pages),
    ssoConnections: new SsoConnectionsRepository(db),
    scimDirectories: new ScimDirectoriesRepository(db),
    scimResources: new ScimResourcesRepository(db),
    apiKeys: new ApiKeysRepository(db),
    webhooks: new WebhooksRepository(db, pages),
    oauthClients: new OAuthClientsRepository(db, pages),
    authorizationArtifacts,
    authorizationServerKeys: new AuthorizationServerKeysRepository(db),
    sealedSecrets: new SealedSecretsRepository(db)
  }
}
