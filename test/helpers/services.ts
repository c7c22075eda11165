import { CursorCodec } from '../../src/collection/cursor.js'
import { loadConfig } from '../../src/config/index.js'
import { PasswordHasher } from '../../src/security/passwords.js'
import { TokenService } from '../../src/security/tokens.js'
import type { AuditTrail } from '../../src/services/audit/index.js'
import { createAuditTrail } from '../../src/services/audit-trail.js'
import type { Resolver } from '../../src/security/outbound-http.js'
import type { Caller, RequestContext } from '../../src/services/context.js'
import { createServices, type Services } from '../../src/services/index.js'
import { REAUTHENTICATION_TTL_MS } from '../../src/services/sign-in/reauthentication.js'
import type { Mailer, MailMessage } from '../../src/services/messaging/ports.js'
import { type Database, openDatabase } from '../../src/store/database.js'
import { migrateToLatest } from '../../src/store/migrations/index.js'
import { createRepositories, type Repositories } from '../../src/store/repositories.js'
import { singleUseStores } from '../../src/store/single-use.js'
import type { UserPrincipal } from '../../src/store/users.js'
import { TEST_PASSWORD, uniqueEmail } from './accounts.js'
import { loopbackResolver, noTxtRecords, TEST_SECRET } from './app.js'
import type { TestContext } from './context.js'
import { freshDatabaseUrl } from './database.js'
import { TestProvider } from './servers/oauth-provider.js'

export interface ServiceFixture {
  services: Services
  repositories: Repositories
  database: Database
  audit: AuditTrail
  /** How far ahead of Date.now the clock of one-time tokens and message codes reads (ms). */
  clock: { aheadMs: number }
  /** The e-mails delivered, in order (services deliver after answering: await `delivered()` first). */
  sent: MailMessage[]
  delivered: () => Promise<void>
  /** The audit log's rows for one event, oldest first. */
  audited: (event: string) => Promise<Array<{
    actor_id: string | null
    target_id: string | null
    ip: string | null
    user_agent: string | null
    outcome: string
    details: Record<string, unknown>
  }>>
}

/**
 * The service layer over a fresh database (SQLite in memory, or a new PostgreSQL schema), with
 * no HTTP in front: what the route handlers call, called directly. Hashing uses few rounds:
 * these tests are about the rules, not the hash's cost. `env` adds configuration variables.
 */
export async function buildServices (
  t: TestContext,
  postgresUrl: string | null,
  env: Record<string, string> = {},
  options: { resolve?: Resolver } = {}
): Promise<ServiceFixture> {
  const config = loadConfig({ DATABASE_URL: await freshDatabaseUrl(t, postgresUrl), JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent', MFA_REQUIRED_ROLES: 'none', ...env })
  const database = openDatabase(config.database)
  await migrateToLatest(database.db, database.dialect)
  const cursors = new CursorCodec(config.jwtSecret)
  const repositories = createRepositories(database, { cursors, countLimit: config.collectionCountLimit })
  // As the app stores entries: with the webhook deliveries they bring about.
  const audit = createAuditTrail({ config, repositories }, {
    published: () => { services.webhookDispatcher.kick() },
    failed: (error) => { throw error }
  })
  const sent: MailMessage[] = []
  // A deployment's own Mailer, as the service layer allows: this one keeps what it is given.
  const mailer: Mailer = {
    timeoutMs: 1000,
    async send (message) { sent.push(message) },
    async close () {}
  }
  const silent = { info () {}, warn () {}, error () {} }
  const clock = { aheadMs: 0 }
  const services = createServices({
    config,
    repositories,
    cursors,
    passwords: new PasswordHasher({ rounds: 1000, concurrency: 2, queueLimit: 16 }),
    tokens: new TokenService({ secret: config.jwtSecret }),
    audit,
    revokeAccessToken: async (jti, expiresAt) => {
      await repositories.revocations.add(jti, expiresAt.toISOString(), new Date().toISOString())
    },
    singleUse: singleUseStores(database.db, null),
    mailer,
    sms: { timeoutMs: 1000, async send () {} },
    log: silent,
    now: () => Date.now() + clock.aheadMs,
    resolve: options.resolve ?? loopbackResolver,
    resolveTxt: noTxtRecords
  })
  t.teardown(async () => {
    await services.webhookDispatcher.stop()
    await services.outbox.stop()
    await audit.close()
    await database.close()
  })
  async function audited (event: string) {
    const rows = await database.db.selectFrom('audit_logs').selectAll().where('event', '=', event).orderBy('created_at').orderBy('id').execute()
    return rows.map((row) => ({ ...row, details: JSON.parse(row.details) as Record<string, unknown> }))
  }
  async function delivered () {
    await services.outbox.deliverDue()
  }
  return { services, repositories, database, audit, clock, sent, delivered, audited }
}

/** A request from `ip`, by `caller` when signed in. */
export function contextFrom (ip: string, caller: Caller | null = null): RequestContext {
  return { ip, userAgent: 'service-test', caller }
}

/** The context of a request by `caller` (from `context`'s address and agent, when given), as authentication sets it. */
export function actingAs (caller: Caller | null, context: RequestContext = contextFrom('192.0.2.1')): RequestContext {
  return { ...context, caller }
}

/** A caller as authentication establishes one from a token (by default one no session issued). */
export function callerOfPrincipal (principal: UserPrincipal, token?: string): Caller {
  const claims = token === undefined ? undefined : new TokenService({ secret: TEST_SECRET }).verify(token, 'access')
  return {
    id: principal.id,
    roles: principal.roles,
    mfaEnabled: principal.mfaEnabled,
    jti: claims?.jti ?? 'jti-of-' + principal.id,
    tokenExpiresAt: new Date(Date.now() + 60_000),
    authTime: claims?.auth_time ?? Math.floor(Date.now() / 1000),
    amr: claims?.amr ?? [],
    impersonatorId: claims?.act?.sub ?? null
  }
}

/** Registers an account through the service and grants `roles` directly in the store; answers it as a caller. */
export async function registered ({ services, repositories }: ServiceFixture, roles: Array<'moderator' | 'admin' | 'super_admin'> = []): Promise<Caller & { email: string }> {
  const email = uniqueEmail('service')
  const user = await services.accounts.register(contextFrom('192.0.2.1'), { email, name: 'Service Test', password: TEST_PASSWORD })
  for (const role of roles) await repositories.users.addRole(user.id, role)
  const principal = await repositories.users.findPrincipal(user.id)
  if (principal === undefined) throw new Error('registered account not found')
  return { ...callerOfPrincipal(principal), email }
}

/**
 * An account as its owner uses it (docs/testing.md, "Test accounts"): registered, its address
 * proved (claimed), signed in to a session of its own (recorded without an entry of its own, so
 * tests count only theirs) and, unless `reauthenticated: false`, stepped up, so that sensitive
 * changes made as it succeed for 5 minutes. Answers it as a caller of that session.
 */
export async function owner (
  fixture: ServiceFixture, roles: Array<'moderator' | 'admin' | 'super_admin'> = [], options: { reauthenticated?: boolean } = {}
): Promise<Caller & { email: string }> {
  const { services, repositories, audit } = fixture
  const account = await registered(fixture, roles)
  await repositories.users.markEmailVerified(account.id, account.email)
  const principal = await repositories.users.findPrincipal(account.id)
  if (principal === undefined) throw new Error('registered account not found')
  const pair = await services.sessions.start(principal, undefined, ['pwd'], audit.recorded(contextFrom('192.0.2.1'), []))
  const caller = callerOfPrincipal(principal, pair.access_token)
  if (options.reauthenticated !== false) {
    await repositories.sessions.grantReauthentication(
      caller.id,
      caller.jti,
      new Date(Date.now() + REAUTHENTICATION_TTL_MS).toISOString()
    )
  }
  return { ...caller, email: account.email }
}

/**
 * A session of an existing account without a password (a provider's, say), stepped up with a
 * code sent to its verified address, as such an account proves itself for a sensitive change.
 */
export async function steppedUpWithoutPassword (fixture: ServiceFixture, userId: string): Promise<Caller> {
  const { services, repositories } = fixture
  const principal = await repositories.users.findPrincipal(userId)
  if (principal === undefined) throw new Error('no such account')
  const context = contextFrom('192.0.2.2')
  const pair = await services.sessions.start(principal, undefined, ['fed'], fixture.audit.recorded(context, [{ event: 'auth.login', outcome: 'success', actorId: userId, targetId: userId }]))
  const caller = callerOfPrincipal(principal, pair.access_token)
  const before = fixture.sent.length
  await services.reauthentication.sendCode(contextFrom('192.0.2.2', caller), 'email')
  await fixture.delivered()
  const code = /is (\d{6})\./.exec(fixture.sent.slice(before).at(-1)?.text ?? '')?.[1]
  if (code === undefined) throw new Error('no code was sent')
  await services.reauthentication.reauthenticate(contextFrom('192.0.2.2', caller), { code })
  return caller
}

/** The bare token of the last message delivered to `to` with a subject starting `subject`. */
export async function tokenSent ({ sent, delivered }: ServiceFixture, to: string, subject: string): Promise<string> {
  await delivered()
  const message = sent.filter((mail) => mail.to === to && mail.subject.startsWith(subject)).at(-1)
  const token = message === undefined ? undefined : /Token: ([A-Za-z0-9_-]+)/.exec(message.text)?.[1]
  if (token === undefined) throw new Error(`no "${subject}" message with a token to ${to}`)
  return token
}

/** The account's address unverified again, as after a change of address: the account stays claimed. */
export async function unverifyAddress ({ database }: ServiceFixture, userId: string): Promise<void> {
  await database.db.updateTable('users').set({ email_verified: 0 }).where('id', '=', userId).execute()
}

/** Where the test provider sends the browser back; the service's own callback in the tests. */
const PROVIDER_REDIRECT = 'http://127.0.0.1:3000/callback'

/** Google on fixed endpoints, served by a test provider stopped at the test's end, and the variables for it. */
export async function googleTestProvider (
  t: TestContext
): Promise<{ provider: TestProvider, env: Record<string, string> }> {
  const provider = await new TestProvider({ id: 'google-client', secret: 'google-secret', redirectUri: PROVIDER_REDIRECT })
    .start()
  t.teardown(async () => { await provider.stop() })
  const env = {
    OAUTH_GOOGLE_CLIENT_ID: 'google-client',
    OAUTH_GOOGLE_CLIENT_SECRET: 'google-secret',
    OAUTH_GOOGLE_REDIRECT_URI: PROVIDER_REDIRECT,
    OAUTH_GOOGLE_AUTH_URL: `${provider.base}/authorize`,
    OAUTH_GOOGLE_TOKEN_URL: `${provider.base}/token`,
    OAUTH_GOOGLE_USERINFO_URL: `${provider.base}/userinfo`
  }
  return { provider, env }
}

/** A whole provider flow through the service: authorize, the user approves `profile`, the callback finishes. */
export async function providerSignIn (
  { services }: ServiceFixture, provider: TestProvider, profile: Record<string, unknown>, ip = '198.51.100.30'
) {
  const { url, state } = await services.federation.authorize('google', {})
  const code = provider.approve(new URL(url).searchParams.get('code_challenge') ?? '', profile)
  const flow = await services.federation.takeState('google', { state }, state)
  return await services.federation.finish(contextFrom(ip), flow, { code, state })
}
