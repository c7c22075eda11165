/*
 * Migrations are append-only: a released migration is never edited (databases record it by
 * name and never run it again); a change is a new file, appended to MIGRATIONS below.
 */
import { type Kysely, type Migration, Migrator, sql } from 'kysely'
import type { Dialect } from '../types.js'
import * as m0001 from './0001-users-roles-refresh-tokens.js'
import * as m0002 from './0002-sessions-revocations-sign-in-failures.js'
import * as m0003 from './0003-audit-logs-trusted-devices.js'
import * as m0004 from './0004-mfa.js'
import * as m0005 from './0005-oauth.js'
import * as m0006 from './0006-posts-comments.js'
import * as m0007 from './0007-sign-in-failures-cleared.js'
import * as m0008 from './0008-sessions-live-index.js'
import * as m0009 from './0009-email-recovery-message-factors.js'
import * as m0010 from './0010-collections-at-scale.js'
import * as m0011 from './0011-refresh-retries.js'
import * as m0012 from './0012-oauth-browser-sign-in.js'
import * as m0013 from './0013-passkeys.js'
import * as m0014 from './0014-account-assurance.js'
import * as m0015 from './0015-organizations.js'
import * as m0016 from './0016-webhooks.js'
import * as m0017 from './0017-user-suspension.js'
import * as m0018 from './0018-impersonations.js'
import * as m0019 from './0019-account-deletion.js'
import * as m0020 from './0020-authorization-server.js'
import * as m0021 from './0021-authorization-server-sessions.js'
import * as m0022 from './0022-organizations-search-index.js'
import * as m0023 from './0023-authorization-server-keys.js'
import * as m0024 from './0024-organization-limits-delivery-erasure.js'
import * as m0025 from './0025-members-search-index.js'
import * as m0026 from './0026-organization-domains.js'
import * as m0027 from './0027-sso-connections.js'
import * as m0028 from './0028-scim-directories.js'
import * as m0029 from './0029-sso-idp-initiated.js'
import * as m0030 from './0030-sso-idp-metadata-url.js'
import * as m0031 from './0031-sso-oidc-connections.js'
import * as m0032 from './0032-email-sign-ins.js'
import * as m0033 from './0033-api-keys.js'
import * as m0034 from './0034-lockouts-locked-until.js'
import * as m0035 from './0035-impersonator-sessions.js'

interface MigrationFile {
  /** Recorded in kysely_migration: renaming one would run it again. */
  name: string
  up: (db: Kysely<any>, dialect: Dialect) => Promise<void>
}

/** In order; listed rather than read from the folder, so the build and tsx find the same ones. */
const MIGRATIONS: readonly MigrationFile[] = [
  m0001, m0002, m0003, m0004, m0005, m0006, m0007, m0008, m0009, m0010, m0011, m0012, m0013, m0014, m0015, m0016, m0017,
  m0018, m0019, m0020, m0021, m0022, m0023, m0024, m0025, m0026, m0027, m0028, m0029, m0030, m0031, m0032, m0033,
  m0034, m0035
]

/** The one set of migrations for both databases. */
function migrations (dialect: Dialect): Record<string, Migration> {
  return Object.fromEntries(MIGRATIONS.map((migration) => [migration.name, {
    async up (db: Kysely<any>) { await migration.up(db, dialect) }
  }]))
}

/** Brings the schema to the latest version; throws with the failing migration's error. */
export async function migrateToLatest (db: Kysely<any>, dialect: Dialect): Promise<string[]> {
  // Kysely looks for its bookkeeping tables in every schema; name the one in use, so a
  // database holding several copies of the service's tables (one per schema) works.
  const schema = dialect === 'postgres'
    ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
    : undefined
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations(dialect) },
    ...(schema !== undefined && { migrationTableSchema: schema })
  })
  const { error, results = [] } = await migrator.migrateToLatest()
  if (error !== undefined) throw error instanceof Error ? error : new Error(String(error))
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}
