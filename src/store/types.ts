import type { Generated, Kysely } from 'kysely'
import type { DomainVerificationMethod } from '../../schemas/domains.js'
import type { OrganizationRole } from '../../schemas/organizations.js'

/** Timestamps are ISO 8601 UTC strings in both dialects (see database.ts). */
export interface UsersTable {
  id: string
  email: string
  name: string
  /** null for accounts that sign in only through an external provider. */
  password_hash: string | null
  totp_enabled_at: string | null
  totp_secret: string | null
  totp_pending_secret: string | null
  /** bigint: PostgreSQL hands it back as a string. */
  totp_last_step: number | string | null
  /** 1 once the address was proved by a message sent to it, else 0. */
  email_verified: number
  /** E.164, for SMS codes. */
  phone: string | null
  mfa_email_enabled_at: string | null
  mfa_sms_enabled_at: string | null
  /** When the address was first proved; null while the account is unclaimed (docs/security.md, "Account claiming"). */
  claimed_at: string | null
  /** Raised by a new password or a claim: MFA challenges carry the version they were issued under. */
  credentials_version: Generated<number>
  /** A suspension in force from then (docs/api.md, "Suspension"); null when none. */
  suspended_at: string | null
  /** When it ends by itself; null: when lifted. */
  suspended_until: string | null
  suspension_reason: string | null
  suspended_by: string | null
  /**
   * When the account is erased: its holder asked for deletion, with a grace period (docs/api.md,
   * "Deleting one's account").
   */
  deletion_due_at: string | null
  created_at: string
  updated_at: string
}

export type OneTimeTokenPurpose = 'email_verification' | 'password_reset'

export interface EmailSignInsTable {
  id: string
  /** Normalized. */
  email: string
  /** null: no account had the address when the code was sent. */
  user_id: string | null
  /** Keyed hashes (src/services/sign-in/email-sign-in.ts). */
  code_hash: string
  link_hash: string
  /** The token a confirmed link handed the application; null until then. */
  token_hash: string | null
  confirmed_at: string | null
  /** Where a confirmed link sends the browser (an allowed redirect URL); null: the service's own page. */
  redirect_to: string | null
  /** Wrong codes given for it. */
  attempts: number
  created_at: string
  expires_at: string
  used_at: string | null
}

export interface OneTimeTokensTable {
  token_hash: string
  user_id: string
  purpose: OneTimeTokenPurpose
  email: string
  created_at: string
  expires_at: string
  used_at: string | null
}

export interface OutboxTable {
  id: string
  channel: 'email' | 'sms'
  recipient: string
  subject: string
  text_body: string
  html_body: string | null
  created_at: string
  attempts: number
  next_attempt_at: string
  claimed_until: string | null
  last_error: string | null
}

export interface MfaMessageCodesTable {
  id: string
  user_id: string
  challenge_jti: string
  method: 'email' | 'sms'
  code_hash: string
  created_at: string
  expires_at: string
  used_at: string | null
}

export interface MfaBackupCodesTable {
  id: string
  user_id: string
  code_hash: string
  created_at: string
}

export interface UserRolesTable {
  user_id: string
  role: string
  created_at: string
}

export interface RefreshTokensTable {
  jti: string
  /** A session is one refresh-token family (docs/api.md, "Sessions"). */
  session_id: string
  user_id: string
  token_hash: string
  /** JSON text of the device object given at sign-in. */
  device: string
  created_at: string
  expires_at: string
  spent_at: string | null
  revoked_at: string | null
  access_jti: string | null
  /** The organization that access token speaks for (its org_id), if any. */
  organization_id: string | null
}

/** One sign-in: a refresh-token family with its device and activity. */
export interface SessionsTable {
  id: string
  user_id: string
  device: string
  created_at: string
  last_used_at: string
  revoked_at: string | null
  revoked_reason: string | null
  /** The session's last rotation, kept for retries (docs/api.md, "Sessions"): the spent token's jti, */
  retry_jti: string | null
  /** the pair it was rotated into, sealed (SecretBox), */
  retry_pair: string | null
  /** and until when a retry gets that pair. */
  retry_until: string | null
  /**
   * When the sign-in that opened the session was proved, and how
   * (RFC 8176 values, JSON): the access tokens' auth_time and amr.
   */
  auth_time: string | null
  amr: string | null
  /** Until when a step-up lets the session make sensitive changes (docs/security.md, "Sensitive changes"). */
  reauthenticated_until: string | null
  /** The organization the session's access tokens speak for (POST /auth/organization), while a member. */
  organization_id: string | null
  /** The authorization server's session (its uid) this session is, when opened at its pages. */
  authorization_session_uid: string | null
}

/** An administrator acting as a user (docs/api.md, "Impersonation"): its one access token. */
export interface ImpersonationsTable {
  id: string
  user_id: string
  /** Null once the administrator's account is deleted. */
  impersonator_id: string | null
  reason: string
  access_jti: string
  created_at: string
  expires_at: string
  /** The administrator's session it was started from: ending it ends the impersonation. Null before 0035. */
  impersonator_session_id: string | null
}

/** Access-token identifiers refused until they expire (docs/api.md, "Token revocation"). */
export interface RevokedTokensTable {
  jti: string
  expires_at: string
  created_at: string
}

export interface SignInFailuresTable {
  id: string
  user_id: string
  ip: string
  created_at: string
  /** When a successful sign-in from `ip` cleared it for the lockout; null while it counts. */
  cleared_at: string | null
}

export interface LockoutsTable {
  id: string
  user_id: string
  ip: string | null
  created_at: string
  locked_until: string
}

export interface AuditLogsTable {
  id: string
  event: string
  actor_id: string | null
  target_id: string | null
  ip: string | null
  user_agent: string | null
  outcome: string
  /** JSON text, redacted before it is written. */
  details: string
  created_at: string
}

export interface TrustedDevicesTable {
  id: string
  user_id: string
  device_id: string
  name: string
  created_at: string
}

export interface UserIdentitiesTable {
  /** Added by migration 0012, filled for the identities linked before it. */
  id: string
  provider: string
  subject: string
  user_id: string
  email: string | null
  created_at: string
}

export interface OAuthStatesTable {
  state_hash: string
  provider: string
  code_verifier: string
  nonce: string | null
  redirect_to: string | null
  code_challenge: string | null
  created_at: string
  expires_at: string
}

export interface OAuthExchangeCodesTable {
  code_hash: string
  user_id: string
  provider: string
  code_challenge: string
  created_at: string
  expires_at: string
}

export interface PostsTable {
  id: string
  author_id: string
  title: string
  body: string
  status: 'draft' | 'published' | 'archived'
  created_at: string
  updated_at: string
}

export interface CommentsTable {
  id: string
  post_id: string
  author_id: string
  body: string
  created_at: string
}

/** Exact row counts kept by triggers (migration 0010): `users`, `audit_logs`, `posts`, `posts:<status>`. */
export interface CollectionCountsTable {
  name: string
  /** bigint: PostgreSQL hands it back as a string. */
  total: number | string
}

export interface PasskeysTable {
  id: string
  user_id: string
  /** base64url, as the browser's credential id. */
  credential_id: string
  /** The COSE public key, base64url. */
  public_key: string
  /** bigint: PostgreSQL hands it back as a string. */
  counter: number | string
  /** Comma-separated transports the authenticator reported (may be empty). */
  transports: string
  name: string
  created_at: string
  last_used_at: string | null
}

export interface PasskeyChallengesTable {
  key_hash: string
  user_id: string | null
  challenge: string
  created_at: string
  expires_at: string
}

export interface OrganizationsTable {
  id: string
  name: string
  slug: string
  created_at: string
  updated_at: string
  /** Who created it (migration 0024); null before, or once that account is erased. */
  created_by: string | null
}

export interface OrganizationMembersTable {
  organization_id: string
  user_id: string
  role: OrganizationRole
  created_at: string
}

export interface OrganizationDomainsTable {
  id: string
  organization_id: string
  /** Lower case, without a trailing dot. */
  domain: string
  /** The value of the TXT record that proves the claim. */
  verification_token: string
  verified_at: string | null
  verified_by: DomainVerificationMethod | null
  /** 1: the domain's addresses sign in through SSO only (while verified). */
  sso_required: number
  created_at: string
}

export interface SsoConnectionsTable {
  id: string
  organization_id: string
  name: string
  enabled: number
  idp_entity_id: string
  idp_sso_url: string
  /** JSON array of DER certificates in base64. */
  idp_certificates: string
  /** JSON: SsoAttributeMapping. */
  attribute_mapping: string
  /** JSON: group name to organization role. */
  role_mapping: string
  default_role: OrganizationRole
  /** The application's page an IdP-initiated response sends the browser to; null: refused. */
  idp_initiated_login_url: string | null
  /** Where the IdP's metadata is read (again daily); null: configured by hand or by pasted metadata. */
  idp_metadata_url: string | null
  idp_metadata_read_at: string | null
  idp_metadata_due_at: string | null
  /** Failed reads since the last good one. */
  idp_metadata_failures: number
  /** 'saml', or 'oidc': the oidc_ columns say which OpenID provider (the idp_ ones are then empty). */
  kind: 'saml' | 'oidc'
  oidc_issuer: string | null
  oidc_client_id: string | null
  /** Sealed. */
  oidc_client_secret: string | null
  oidc_token_endpoint_auth_method: 'client_secret_basic' | 'client_secret_post' | null
  /** JSON array of scope tokens. */
  oidc_scopes: string | null
  created_at: string
  updated_at: string
}

export interface ApiKeysTable {
  id: string
  /** The person's key: it acts as them. Null for an organization's key. */
  user_id: string | null
  /** The organization's key: it acts with `role` there, no person behind it. */
  organization_id: string | null
  role: OrganizationRole | null
  name: string
  /** SHA-256 of the key, base64url. */
  key_hash: string
  /** JSON array of the permissions the key may use. */
  scopes: string
  created_by: string | null
  created_at: string
  expires_at: string | null
  last_used_at: string | null
}

export interface ScimDirectoriesTable {
  id: string
  organization_id: string
  name: string
  /** SHA-256 of the bearer token, base64url. */
  token_hash: string
  /** JSON: group display name to organization role. */
  role_mapping: string
  default_role: OrganizationRole
  created_at: string
  updated_at: string
}

export interface ScimUsersTable {
  id: string
  directory_id: string
  user_id: string
  /** Lower case. */
  user_name: string
  external_id: string | null
  active: number
  /** JSON: the User resource as the directory last wrote it (no password). */
  resource: string
  created_at: string
  updated_at: string
}

export interface ScimGroupsTable {
  id: string
  directory_id: string
  display_name: string
  external_id: string | null
  created_at: string
  updated_at: string
}

export interface ScimGroupMembersTable {
  group_id: string
  scim_user_id: string
}

export interface SsoAssertionIdsTable {
  key_hash: string
  expires_at: string
}

export interface OrganizationInvitationsTable {
  id: string
  organization_id: string
  /** Normalized (lower case), as users' addresses are. */
  email: string
  role: OrganizationRole
  /** SHA-256 of the token sent in the message. */
  token_hash: string
  invited_by: string | null
  created_at: string
  expires_at: string
  /** When it was accepted or withdrawn; it still counts toward the hourly limit. */
  closed_at: string | null
}

export interface WebhookEndpointsTable {
  id: string
  url: string
  description: string
  /** A JSON array of event types. */
  event_types: string
  /** Sealed (SecretBox) under the service's secret. */
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: string | null
  /** Null while enabled. */
  disabled_at: string | null
  disabled_reason: 'manual' | 'failing' | null
  last_success_at: string | null
  created_by: string | null
  created_at: string
  updated_at: string
}

export interface WebhookDeliveriesTable {
  id: string
  endpoint_id: string
  event_type: string
  /** The body sent, as sent. */
  payload: string
  status: 'pending' | 'succeeded' | 'failed'
  attempts: number
  /** Null once settled, or while the endpoint is disabled. */
  next_attempt_at: string | null
  claimed_until: string | null
  last_status: number | null
  last_error: string | null
  created_at: string
  updated_at: string
  /** The audit entry the event stands for (migration 0024): erasing its account scrubs the payload. */
  audit_log_id: string | null
}

/** An application signing people in with the service (migration 0020). */
export interface OAuthClientsTable {
  id: string
  name: string
  /** SHA-256 of the secret, base64url; null for a public client. */
  secret_hash: string | null
  /** JSON arrays. */
  redirect_uris: string
  post_logout_redirect_uris: string
  grant_types: string
  scopes: string
  /** Null while enabled. */
  disabled_at: string | null
  created_by: string | null
  created_at: string
  updated_at: string
  /** What its ID tokens are signed with; null: RS256. */
  id_token_signed_response_alg: string | null
}

/** A key the authorization server signs ID tokens with (src/store/authorization-server-keys.ts). */
export interface AuthorizationServerKeysTable {
  kid: string
  algorithm: string
  generation: number
  status: 'staged' | 'signing' | 'retiring'
  /** The PKCS#8 PEM, sealed (SecretBox, purpose `authorization-server-key`). */
  private_key: string
  created_at: string
}

/** One object of the authorization server (oidc-provider): its model, id and JSON payload. */
export interface AuthorizationArtifactsTable {
  model: string
  id: string
  payload: string
  grant_id: string | null
  user_code: string | null
  uid: string | null
  account_id: string | null
  client_id: string | null
  expires_at: string | null
  /** A grant's: the organization its consent chose for the `organization` scope. */
  organization_id: string | null
}

export interface DatabaseSchema {
  users: UsersTable
  user_roles: UserRolesTable
  refresh_tokens: RefreshTokensTable
  sessions: SessionsTable
  impersonations: ImpersonationsTable
  revoked_tokens: RevokedTokensTable
  sign_in_failures: SignInFailuresTable
  lockouts: LockoutsTable
  audit_logs: AuditLogsTable
  trusted_devices: TrustedDevicesTable
  mfa_backup_codes: MfaBackupCodesTable
  user_identities: UserIdentitiesTable
  oauth_states: OAuthStatesTable
  oauth_exchange_codes: OAuthExchangeCodesTable
  posts: PostsTable
  comments: CommentsTable
  one_time_tokens: OneTimeTokensTable
  email_sign_ins: EmailSignInsTable
  outbox: OutboxTable
  mfa_message_codes: MfaMessageCodesTable
  collection_counts: CollectionCountsTable
  passkeys: PasskeysTable
  passkey_challenges: PasskeyChallengesTable
  organizations: OrganizationsTable
  organization_members: OrganizationMembersTable
  organization_invitations: OrganizationInvitationsTable
  organization_domains: OrganizationDomainsTable
  sso_connections: SsoConnectionsTable
  sso_assertion_ids: SsoAssertionIdsTable
  scim_directories: ScimDirectoriesTable
  api_keys: ApiKeysTable
  scim_users: ScimUsersTable
  scim_groups: ScimGroupsTable
  scim_group_members: ScimGroupMembersTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  oauth_clients: OAuthClientsTable
  authorization_artifacts: AuthorizationArtifactsTable
  authorization_server_keys: AuthorizationServerKeysTable
}

export type Db = Kysely<DatabaseSchema>

/**
 * Runs `work` in a transaction, or in the one `db` already is: a repository's own transaction
 * then joins its caller's (a change and the audit entry that records it commit together).
 */
export async function atomically<T> (db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? await work(db) : await db.transaction().execute(work)
}

export type Dialect = 'sqlite' | 'postgres'
