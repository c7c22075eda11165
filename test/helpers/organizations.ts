/**
 * What the organization tests share: the app with a real SMTP server and the calls the route tests
 * make through `app.inject` (`OrganizationHarness`); organizations and memberships made through the
 * services for test/services/; a migrated database whose repositories record the queries they run,
 * for the query plans of test/store/.
 */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { CompiledQuery, KyselyPlugin, QueryId, RootOperationNode } from 'kysely'
import type { Test } from 'tap'
import type { OrganizationRole } from '../../schemas/organizations.js'
import { CursorCodec } from '../../src/collection/cursor.js'
import { COUNT_LIMITS } from '../../src/collection/query.js'
import { loadConfig } from '../../src/config/index.js'
import { type Database, openDatabase } from '../../src/store/database.js'
import { migrateToLatest } from '../../src/store/migrations/index.js'
import { createRepositories } from '../../src/store/repositories.js'
import { type Account, createAccount, withToken } from './accounts.js'
import { build, type BuildOptions, redisReady, TEST_SECRET } from './app.js'
import { within } from './clock.js'
import type { TestContext } from './context.js'
import { freshDatabaseUrl, REDIS_ENV } from './database.js'
import { type MailServer, mailServer, tokenIn } from './servers/mail-server.js'
import { actingAs, buildServices, owner, type ServiceFixture } from './services.js'

export const APP_URL = 'https://app.example.test'

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'
export interface Organization {
  id: string, name: string, slug: string, role: OrganizationRole | null, created_at: string, updated_at: string
}
export interface Pair { access_token: string, refresh_token: string }

let slugCounter = 0
/** A slug no other test of this process uses. */
export function uniqueSlug (prefix = 'org'): string {
  return `${prefix}-${process.pid}-${slugCounter++}`
}

/** The app as the server builds it, its mail sent to a real SMTP server, with Redis when `TEST_REDIS_URL` is set. */
export async function appWithMail (
  t: TestContext, postgresUrl: string | null, options: Pick<BuildOptions, 'onStatement' | 'resolveTxt' | 'env' | 'databaseUrl'> = {}
): Promise<{ app: FastifyInstance, smtp: MailServer }> {
  const smtp = await mailServer(t)
  const env = { SMTP_URL: smtp.url(), APP_URL, ...REDIS_ENV, ...options.env }
  const app = await build(t, { ...options, postgresUrl, env })
  await redisReady(app)
  return { app, smtp }
}

/** Asserts an error answer: its status and code, and its message when given. */
export function refused (t: Test, response: LightMyRequestResponse, status: number, code: string, message?: string) {
  t.equal(response.statusCode, status, `${status} ${code}`)
  t.equal(response.json().error?.code, code)
  if (message !== undefined) t.equal(response.json().error?.message, message)
}

/** The app, its mail server, and the calls the organization route tests make. */
export class OrganizationHarness {
  constructor (readonly app: FastifyInstance, readonly smtp: MailServer) {}

  async call (caller: Account | string, method: Method, path: string, payload?: Record<string, unknown>) {
    const token = typeof caller === 'string' ? caller : caller.token
    return await this.app.inject(withToken(token, {
      method, url: `/api/v1${path}`, ...(payload !== undefined && { payload })
    }))
  }

  async organization (owner: Account, name = 'Acme Corporation', slug = uniqueSlug()): Promise<Organization> {
    const created = await this.call(owner, 'POST', '/organizations', { name, slug })
    if (created.statusCode !== 201) throw new Error(`organization not created: ${created.body}`)
    return created.json().data
  }

  /** Invites `email`; answers the invitation and the token of the message sent for it. */
  async invite (inviter: Account, organizationId: string, email: string, role: OrganizationRole) {
    const response = await this.call(inviter, 'POST', `/organizations/${organizationId}/invitations`, { email, role })
    if (response.statusCode !== 201) throw new Error(`invitation refused: ${response.body}`)
    const mail = await this.invitationMail(email)
    return { invitation: response.json().data, token: tokenIn(mail), mail }
  }

  async invitationMail (email: string) {
    return await within(`the invitation to ${email}`, 10_000,
      this.smtp.next((mail) => mail.to.includes(email) && mail.text.includes('/accept-invitation?token=')))
  }

  async accept (account: Account | string, token: string) {
    return await this.call(account, 'POST', '/invitations/accept', { token })
  }

  /** A new account, a member of the organization with `role` by invitation and acceptance. */
  async member (inviter: Account, organizationId: string, role: OrganizationRole, name = 'Test User'): Promise<Account> {
    const account = await createAccount(this.app, { name })
    const { token } = await this.invite(inviter, organizationId, account.email, role)
    const accepted = await this.accept(account, token)
    if (accepted.statusCode !== 200) throw new Error(`invitation not accepted: ${accepted.body}`)
    return account
  }

  /** A new account's organization named `name`, with an admin and a member, in that order, by invitation. */
  async team (name: string) {
    const owner = await createAccount(this.app)
    const organization = await this.organization(owner, name)
    const admin = await this.member(owner, organization.id, 'admin')
    const member = await this.member(owner, organization.id, 'member')
    return { owner, organization, admin, member }
  }

  /** A new account's organization named `name`, and its invitation as `role` of another new account (`invitee`). */
  async withInvitee (name: string, role: OrganizationRole, invitee: Parameters<typeof createAccount>[1] = {}) {
    const owner = await createAccount(this.app)
    const organization = await this.organization(owner, name)
    const account = await createAccount(this.app, invitee)
    const { invitation, token } = await this.invite(owner, organization.id, account.email, role)
    return { owner, organization, invitee: account, invitation, token }
  }

  /** A new session of the account: its pair (each account may hold 3 sessions). */
  async signIn (account: Account): Promise<Pair> {
    const login = await this.app.inject({
      method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password }
    })
    if (login.statusCode !== 200) throw new Error(`no session: ${login.body}`)
    return login.json().data
  }

  async select (refreshToken: string, organizationId: string | null) {
    return await this.app.inject({
      method: 'POST', url: '/api/v1/auth/organization', payload: { refresh_token: refreshToken, organization_id: organizationId }
    })
  }

  /** A new session of `account` with the organization selected: its pair. */
  async selected (account: Account, organizationId: string): Promise<Pair> {
    const answer = await this.select((await this.signIn(account)).refresh_token, organizationId)
    if (answer.statusCode !== 200) throw new Error(`organization not selected: ${answer.body}`)
    return answer.json().data
  }

  async refresh (refreshToken: string) {
    return await this.app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } })
  }

  /** The audit entries of `event`, oldest first, those of `organizationId` when given. */
  async audited (event: string, organizationId?: string) {
    await this.app.auditTrail.flush()
    const rows = await this.app.database.db.selectFrom('audit_logs').selectAll().where('event', '=', event)
      .orderBy('created_at').orderBy('id').execute()
    return rows.map((row) => ({ ...row, details: JSON.parse(row.details) as Record<string, unknown> }))
      .filter((row) => organizationId === undefined || row.details.organization_id === organizationId)
  }
}

/** An account of the service tests, as `owner` and `registered` (test/helpers/services.ts) answer it. */
export type ServiceAccount = Awaited<ReturnType<typeof owner>>

/** An organization `creator` creates through the service, with a slug of its own. */
export async function organizationOf ({ services }: ServiceFixture, creator: ServiceAccount, name = 'Acme') {
  return await services.organizations.create(actingAs(creator), { name, slug: uniqueSlug() })
}

/** Makes `userId` a member straight in the store, as an accepted invitation would: the rules under test come after. */
export async function join (
  { database }: ServiceFixture, organizationId: string, userId: string, role: OrganizationRole
) {
  await database.db.insertInto('organization_members')
    .values({ organization_id: organizationId, user_id: userId, role, created_at: new Date().toISOString() }).execute()
}

/** The services over a fresh database (`env` added to the configuration), and `alice`, an `owner` account. */
export async function servicesWithOwner (t: TestContext, postgresUrl: string | null, env: Record<string, string> = {}) {
  const fixture = await buildServices(t, postgresUrl, env)
  return { fixture, services: fixture.services, alice: await owner(fixture) }
}

/** `servicesWithOwner`, and an organization alice created, named `name`. */
export async function servicesWithOrganization (
  t: TestContext, postgresUrl: string | null, options: { env?: Record<string, string>, name?: string } = {}
) {
  const setting = await servicesWithOwner(t, postgresUrl, options.env)
  return { ...setting, organization: await organizationOf(setting.fixture, setting.alice, options.name) }
}

/** A fresh database (`freshDatabaseUrl`), migrated, closed at teardown. */
export async function migratedDatabase (t: TestContext, postgresUrl: string | null): Promise<Database> {
  const config = loadConfig({ DATABASE_URL: await freshDatabaseUrl(t, postgresUrl), JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'silent' })
  const database = openDatabase(config.database)
  t.teardown(async () => { await database.close() })
  await migrateToLatest(database.db, database.dialect)
  return database
}

/**
 * Repositories over `database` that keep every query they ran, with its values (`ran`): the
 * collection pages (run as compiled reads) and every statement run through Kysely (on `db`).
 */
export function recordingRepositories (database: Database) {
  const ran: Array<CompiledQuery<unknown>> = []
  const executor = database.db.getExecutor()
  const built = new Map<QueryId, RootOperationNode>()
  const recorder: KyselyPlugin = {
    transformQuery: ({ node, queryId }) => {
      built.set(queryId, node)
      return node
    },
    // Called for statements run, not for those only compiled: those are the ones to read.
    transformResult: async ({ result, queryId }) => {
      const node = built.get(queryId)
      if (node !== undefined) ran.push(executor.compileQuery(node, queryId))
      return result
    }
  }
  const db = database.db.withPlugin(recorder)
  const repositories = createRepositories({
    db,
    dialect: database.dialect,
    readRows: <Row>(query: CompiledQuery<Row>) => {
      ran.push(query)
      return database.readRows(query)
    }
  }, { cursors: new CursorCodec(TEST_SECRET), countLimit: COUNT_LIMITS.default })
  return { repositories, ran, db }
}
