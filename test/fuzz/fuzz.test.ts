import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { dirname } from 'node:path'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import fc from 'fast-check'
import { createSigner } from 'fast-jwt'
import { type CompiledQuery, sql } from 'kysely'
import t from 'tap'
import { Errors } from '../../src/errors.js'
import { BODY_LIMIT_BYTES } from '../../src/http/instance.js'
import { hashToken } from '../../src/security/tokens.js'
import { type Account, createAccount, withToken } from '../helpers/accounts.js'
import { SECURITY_HEADERS, TEST_SECRET, build } from '../helpers/app.js'
import { clockPast, within } from '../helpers/clock.js'
import { backends } from '../helpers/database.js'
import { TestProvider } from '../helpers/servers/oauth-provider.js'
import {
  PROTOTYPE_KEYS, RAW_PATH_SEGMENTS, contentType, encodeUrlText, headerValue, hostileBodyText, hostileString,
  hostileValue, mutatedObject, replacementFor, tainted
} from './hostile.js'
import { type JsonSchema, type SchemaArbitraryOptions, boundaryValues, validValue } from './schema-arbitrary.js'

/**
 * Property-based fuzzing of every operation in the OpenAPI document: requests generated from
 * each operation's schemas, then broken in every way a client can break them, sent anonymously,
 * as a user, as an admin and with forged tokens. Each response must keep the rules of
 * docs/api.md, and a refused request must leave the stored data as it was.
 *
 * FUZZ_RUNS: cases per operation on SQLite (PostgreSQL runs a quarter as many: each case costs
 * it round trips SQLite's in-process reads do not). FUZZ_SEED: the seed, printed, to replay a failure.
 */
function integerFromEnvironment (name: string, fallback: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isSafeInteger(value)) throw new Error(`${name} must be an integer, not "${text}"`)
  return value
}

const RUNS = integerFromEnvironment('FUZZ_RUNS', 100)
const SEED = integerFromEnvironment('FUZZ_SEED', 20_251_122)
const POSTGRES_SHARE = 1 / 4
/** Far beyond any sound answer (a password hash is ~65 ms): a request this slow hangs. */
const REQUEST_TIMEOUT_MS = 5000

type Json = Record<string, any>

/** Each error code and its status (docs/api.md, "Errors"), from the error table. */
const ERROR_STATUS: Record<string, number> = Object.fromEntries(Object.values(Errors).map((ServiceError) => {
  const { code, statusCode } = new ServiceError()
  return [code, statusCode ?? 500]
}))

/** The messages the error table fixes (docs/api.md, "Errors"). */
const ERROR_MESSAGE: Record<string, RegExp> = {
  VALIDATION_FAILED: /^Validation failed$/,
  INVALID_TOKEN: /^Invalid token$/,
  TOKEN_EXPIRED: /^Invalid token$/,
  INVALID_CREDENTIALS: /^Invalid email or password$/,
  FORBIDDEN: /^Permission denied\. Requires: [a-z_: ]+$/,
  UNSUPPORTED_PROVIDER: /^Unsupported OAuth2 provider: /,
  EMAIL_ALREADY_REGISTERED: /^Email already registered$/,
  RATE_LIMITED: /^Rate limit exceeded$/,
  INTERNAL_ERROR: /^Internal server error$/
}

/**
 * Password checks, MFA code checks, and the admin operations zero trust evaluates (docs/api.md, "Roles, devices,
 * audit, zero trust").
 */
/**
 * Sensitive changes and the step-up check a proof: a password or a code, counted as at sign-in (docs/api.md,
 * "Step-up").
 */
const PROOF_CHECKS = [
  'POST /api/v1/auth/reauthenticate', 'PUT /api/v1/users/{id}', 'PATCH /api/v1/users/{id}', 'DELETE /api/v1/users/{id}', 'DELETE /api/v1/users/me', 'POST /api/v1/auth/passkeys',
  'PATCH /api/v1/auth/passkeys/{id}', 'DELETE /api/v1/auth/passkeys/{id}', 'POST /api/v1/auth/mfa/totp/enable', 'POST /api/v1/auth/mfa/email/enable',
  'POST /api/v1/auth/mfa/sms/enable', 'DELETE /api/v1/auth/mfa/email', 'DELETE /api/v1/auth/mfa/sms', 'DELETE /api/v1/auth/identities/{id}'
]
const PASSWORD_CHECKS = new Set(['POST /api/v1/auth/login', ...PROOF_CHECKS])
const MFA_CODE_CHECKS = new Set(['POST /api/v1/auth/mfa/verify', 'POST /api/v1/auth/mfa/backup-codes', 'DELETE /api/v1/auth/mfa/totp', ...PROOF_CHECKS])
const ADMIN_OPERATIONS = new Set(['DELETE /api/v1/users/{id}', 'POST /api/v1/users/{id}/suspension', 'DELETE /api/v1/users/{id}/suspension',
  'DELETE /api/v1/users/{id}/sessions/{sessionId}', 'DELETE /api/v1/users/{id}/mfa', 'POST /api/v1/users/{id}/impersonation', 'PUT /api/v1/users/{id}/roles/{role}', 'DELETE /api/v1/users/{id}/roles/{role}', 'GET /api/v1/audit-logs', 'GET /api/v1/overview',
  'POST /api/v1/oauth-clients', 'GET /api/v1/oauth-clients', 'GET /api/v1/oauth-clients/{id}', 'PATCH /api/v1/oauth-clients/{id}', 'POST /api/v1/oauth-clients/{id}/secret',
  'DELETE /api/v1/oauth-clients/{id}'])

/**
 * What docs/api.md has a refused request write; anything else it changes is a bug.
 * - Any request: a 429 may be recorded as `rate_limit.exceeded` ("Rate limits": the first per
 *   client, tier and window).
 * - Sign-in and MFA verification: `auth.login_failed` / `auth.mfa_failed` ("Audit log"), and
 *   the failure count and lockout of "Brute-force lockout" (wrong passwords and codes); a
 *   refused passkey sign-in is audited as `auth.login_failed`, and a refused passkey ceremony
 *   spends its challenge ("Passkeys");
 *   so do the other checks of a secret held to that rule: the current password of a password
 *   change, the code that turns MFA off or mints backup codes.
 * - Refresh (and the organization selection, a refresh): a reused token revokes its whole
 *   session, with the access tokens it issued, and is recorded as `auth.token_reused`; a
 *   timed-out session is ended likewise ("Sessions").
 * - Admin operations: ZERO_TRUST_MODE=monitor, the default, records every evaluation as
 *   `access.evaluated` ("Zero-trust access check"), made before the handler may refuse.
 */
interface PermittedWrites {
  auditEvents: string[]
  /** Tables that may gain rows. */
  appended: string[]
  /** Tables whose rows may change. */
  changed: string[]
}

function permittedWrites (operationKey: string): PermittedWrites {
  const permitted: PermittedWrites = { auditEvents: ['rate_limit.exceeded'], appended: [], changed: [] }
  if (PASSWORD_CHECKS.has(operationKey)) {
    permitted.auditEvents.push('auth.login_failed')
    permitted.appended.push('sign_in_failures', 'lockouts')
  }
  if (MFA_CODE_CHECKS.has(operationKey)) {
    permitted.auditEvents.push('auth.mfa_failed')
    permitted.appended.push('sign_in_failures', 'lockouts')
  }
  if (operationKey === 'POST /api/v1/auth/passkeys/authentication') permitted.auditEvents.push('auth.login_failed')
  if (['POST /api/v1/auth/passkeys/authentication', 'POST /api/v1/auth/passkeys', 'POST /api/v1/auth/reauthenticate'].includes(operationKey)) permitted.changed.push('passkey_challenges')
  if (operationKey === 'POST /api/v1/auth/refresh' || operationKey === 'POST /api/v1/auth/organization') {
    permitted.auditEvents.push('auth.token_reused')
    permitted.changed.push('sessions', 'refresh_tokens')
    permitted.appended.push('revoked_tokens')
  }
  if (ADMIN_OPERATIONS.has(operationKey)) permitted.auditEvents.push('access.evaluated')
  return permitted
}

interface Parameter {
  name: string
  schema: JsonSchema
  required: boolean
}

interface Operation {
  /** `METHOD /path/{param}`, as the document has it. */
  key: string
  method: string
  path: string
  pathParameters: Parameter[]
  queryParameters: Parameter[]
  body: JsonSchema | null
  statuses: Set<number>
  /** Its success is a page for people (the e-mail link's), not JSON. */
  page: boolean
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])

/**
 * The schema with each `$ref` to a component replaced by the component (request schemas refer to a few, as
 * `Password`).
 */
function inlined (schema: unknown, document: Json): any {
  if (Array.isArray(schema)) return schema.map((item) => inlined(item, document))
  if (typeof schema !== 'object' || schema === null) return schema
  const reference = (schema as Json).$ref
  if (typeof reference === 'string') return inlined(document.components.schemas[reference.replace('#/components/schemas/', '')], document)
  return Object.fromEntries(Object.entries(schema).map(([key, item]) => [key, inlined(item, document)]))
}

function operationsOf (document: Json): Operation[] {
  const operations: Operation[] = []
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json)) {
      if (!HTTP_METHODS.has(method)) continue
      const parameters = inlined(operation.parameters ?? [], document) as Array<{
        in: string
        name: string
        schema: JsonSchema
        required?: boolean
      }>
      const of = (place: string) => parameters.filter((parameter) => parameter.in === place)
        .map((parameter) => ({ name: parameter.name, schema: parameter.schema, required: parameter.required === true }))
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParameters: of('path'),
        queryParameters: of('query'),
        body: inlined(operation.requestBody?.content?.['application/json']?.schema ?? null, document),
        statuses: new Set(Object.keys(operation.responses as Json).map(Number)),
        page: operation.responses?.['200']?.content?.['text/html'] !== undefined
      })
    }
  }
  return operations
}

/** The document's parameters as one object schema, so a generator makes all of them at once. */
function parametersSchema (parameters: Parameter[]): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(parameters.map((parameter) => [parameter.name, parameter.schema])),
    required: parameters.filter((parameter) => parameter.required).map((parameter) => parameter.name)
  }
}

type KnownName =
  'admin.id' | 'admin.email' | 'admin.token' | 'user.id' | 'user.email' | 'user.token' | 'user.refreshToken' | 'user.spentRefreshToken' |
  'user.sessionId' | 'post.id' | 'draft.id' | 'comment.id' | 'device.id' | 'device.deviceId' | 'password' |
  'token.none' | 'token.foreign' | 'token.expired' | 'token.unknownUser' | 'token.mfa' | 'directory.id' | 'directory.token'

/**
 * A value that exists in the store (an id, a token, an e-mail), looked up when the request is
 * sent: the accounts and records behind them are made again when a case destroys them.
 * `template` places it in a longer text (`%s`), e.g. an Authorization header.
 */
class Known {
  constructor (readonly name: KnownName, readonly template = '%s') {}

  [fc.toStringMethod] (): string {
    return this.template === '%s' ? `known(${this.name})` : `known(${this.name} in ${JSON.stringify(this.template)})`
  }
}

const known = (...names: KnownName[]) => fc.constantFrom(...names).map((name) => new Known(name))

const POST = { title: 'Fuzz target', body: 'A post the fuzzer may reach' }
const DEVICE = { device_id: 'fuzz-device', name: 'Fuzz device' }

/** The accounts and records the generated requests aim at, made again when a case removes them. */
class Fixtures {
  readonly #app: FastifyInstance
  readonly #values = new Map<KnownName, string>()
  readonly #sign = createSigner({ key: TEST_SECRET, algorithm: 'HS256' })

  private constructor (app: FastifyInstance) {
    this.#app = app
  }

  static async create (app: FastifyInstance): Promise<Fixtures> {
    const fixtures = new Fixtures(app)
    await fixtures.repair()
    const spent = fixtures.get('user.refreshToken')
    const refreshed = await app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: spent } })
    fixtures.#values.set('user.spentRefreshToken', spent)
    fixtures.#values.set('user.refreshToken', refreshed.json().data.refresh_token)
    const now = Math.floor(Date.now() / 1000)
    const claims = { sub: fixtures.get('admin.id'), roles: ['admin'], type: 'access', jti: randomUUID(), iat: now, exp: now + 900 }
    fixtures.#values.set('token.none', createSigner({ algorithm: 'none' })(claims))
    fixtures.#values.set('token.foreign', createSigner({ key: 'another-secret-of-at-least-32-characters', algorithm: 'HS256' })(claims))
    fixtures.#values.set('token.expired', fixtures.#sign({ ...claims, iat: now - 1000, exp: now - 100 }))
    fixtures.#values.set('token.unknownUser', fixtures.#sign({ ...claims, sub: randomUUID() }))
    return fixtures
  }

  get (name: KnownName): string {
    const value = this.#values.get(name)
    if (value === undefined) throw new Error(`no fixture ${name}`)
    return value
  }

  /** The generated value with every Known in it replaced by what it stands for now. */
  resolve (value: unknown): unknown {
    if (value instanceof Known) return value.template.replaceAll('%s', this.get(value.name))
    if (Array.isArray(value)) return value.map((item) => this.resolve(item))
    if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, this.resolve(item)]))
    }
    return value
  }

  #remember (prefix: 'admin' | 'user', account: Account) {
    this.#values.set(`${prefix}.id` as const, account.id)
    this.#values.set(`${prefix}.email` as const, account.email)
    this.#values.set(`${prefix}.token` as const, account.token)
    this.#values.set('password', account.password)
  }

  /** A plain user, and an MFA challenge token for it (it has no MFA, so every code is wrong). */
  async #makeUser () {
    const user = await createAccount(this.#app)
    this.#remember('user', user)
    const now = Math.floor(Date.now() / 1000)
    this.#values.set('token.mfa', this.#sign({ sub: user.id, jti: randomUUID(), iat: now, exp: now + 300, type: 'mfa', device: {} }))
  }

  /** A session of the user's own, whose refresh token the fuzzer may spend and end. */
  async #signInUser (): Promise<boolean> {
    const login = await this.#app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: this.get('user.email'), password: this.get('password') } })
    if (login.statusCode !== 200) return false
    const refreshToken: string = login.json().data.refresh_token
    const row = await this.#app.database.db.selectFrom('refresh_tokens').select('session_id').where('token_hash', '=', hashToken(refreshToken)).executeTakeFirstOrThrow()
    this.#values.set('user.refreshToken', refreshToken)
    this.#values.set('user.sessionId', row.session_id)
    return true
  }

  async #roles (name: 'admin.token' | 'user.token'): Promise<string[] | null> {
    if (!this.#values.has(name)) return null
    const me = await this.#app.inject(withToken(this.get(name), { method: 'GET', url: '/api/v1/auth/me' }))
    return me.statusCode === 200 ? me.json().data.roles : null
  }

  async #exists (table: 'posts' | 'comments' | 'trusted_devices', name: KnownName): Promise<boolean> {
    const id = this.#values.get(name)
    if (id === undefined) return false
    return await this.#app.database.db.selectFrom(table).select('id').where('id', '=', id).executeTakeFirst() !== undefined
  }

  async #liveRefreshToken (): Promise<boolean> {
    const token = this.#values.get('user.refreshToken')
    if (token === undefined) return false
    const row = await this.#app.database.db.selectFrom('refresh_tokens').innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
      .select('refresh_tokens.jti').where('refresh_tokens.token_hash', '=', hashToken(token))
      .where('refresh_tokens.spent_at', 'is', null).where('refresh_tokens.revoked_at', 'is', null).where('sessions.revoked_at', 'is', null)
      .executeTakeFirst()
    return row !== undefined
  }

  async #directoryWorks (): Promise<boolean> {
    const token = this.#values.get('directory.token')
    return token !== undefined && (await this.#app.services.scimDirectories.directoryOfToken(token))?.id === this.#values.get('directory.id')
  }

  /** A SCIM directory of an organization the user owns, for the SCIM operations' `directory` caller. */
  async #makeDirectory () {
    const organization = await this.#create('/api/v1/organizations', { name: 'Fuzzed organization', slug: `fuzzed-${randomUUID()}` })
    const made = await this.#app.inject(withToken(this.get('user.token'), {
      method: 'POST', url: `/api/v1/organizations/${organization}/scim-directories`, payload: { name: 'Fuzzed directory' }
    }))
    if (made.statusCode !== 201) throw new Error(`fixture directory: ${made.body}`)
    this.#values.set('directory.id', made.json().data.id)
    this.#values.set('directory.token', made.json().data.token)
  }

  async #create (url: string, payload: Json): Promise<string> {
    const response = await this.#app.inject(withToken(this.get('user.token'), { method: 'POST', url, payload }))
    if (response.statusCode !== 201) throw new Error(`fixture ${url}: ${response.body}`)
    return response.json().data.id
  }

  /**
   * Makes again what a successful case removed or changed: an admin that is no longer one (or
   * signed out, or deleted), a user that is not a plain user, the user's session (keeping a
   * spent refresh token to present again), posts, comment and device. True when it made any.
   */
  async repair (): Promise<boolean> {
    let repaired = false
    if (!(await this.#roles('admin.token'))?.includes('admin')) {
      this.#remember('admin', await createAccount(this.#app, { roles: ['admin'] }))
      repaired = true
    }
    if ((await this.#roles('user.token'))?.join() !== 'user') {
      await this.#makeUser()
      repaired = true
    }
    if (!await this.#liveRefreshToken()) {
      const previous = this.#values.get('user.refreshToken')
      if (previous !== undefined) this.#values.set('user.spentRefreshToken', previous)
      // A changed password or a lockout keeps the user from signing in: a new one then.
      if (!await this.#signInUser()) {
        await this.#makeUser()
        await this.#signInUser()
      }
      repaired = true
    }
    if (!await this.#directoryWorks()) {
      await this.#makeDirectory()
      repaired = true
    }
    const userId = this.get('user.id')
    if (!await this.#exists('posts', 'post.id')) {
      this.#values.set('post.id', await this.#create('/api/v1/posts', { ...POST, status: 'published' }))
      repaired = true
    }
    if (!await this.#exists('posts', 'draft.id')) {
      this.#values.set('draft.id', await this.#create('/api/v1/posts', { ...POST, status: 'draft' }))
      repaired = true
    }
    if (!await this.#exists('comments', 'comment.id')) {
      this.#values.set('comment.id', await this.#create(`/api/v1/posts/${this.get('post.id')}/comments`, { body: 'A comment the fuzzer may reach' }))
      repaired = true
    }
    if (!await this.#exists('trusted_devices', 'device.id')) {
      const device = await this.#app.database.db.selectFrom('trusted_devices').select(['id', 'device_id']).where('user_id', '=', userId).executeTakeFirst()
      this.#values.set('device.id', device?.id ?? await this.#create(`/api/v1/users/${userId}/devices`, DEVICE))
      this.#values.set('device.deviceId', device?.device_id ?? DEVICE.device_id)
      repaired = true
    }
    return repaired
  }
}

const IDS: KnownName[] = ['admin.id', 'user.id', 'post.id', 'draft.id', 'comment.id', 'device.id', 'user.sessionId']
/** Field names of every collection: some of them the collection's own, the others not. */
const FIELD_NAMES = ['id', 'email', 'name', 'created_at', 'updated_at', 'title', 'body', 'status', 'author_id', 'post_id', 'event', 'actor_id',
  'target_id', 'ip', 'user_agent', 'outcome', 'details', 'device', 'device_id', 'last_used_at']
const instant = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })

/** Known values offered for properties and parameters of these names, beside the schema's own. */
const HINTS: Record<string, fc.Arbitrary<unknown>> = {
  commentId: known('comment.id', 'post.id'),
  deviceId: known('device.id', 'device.deviceId'),
  provider: fc.constantFrom('google', 'Google', 'GOOGLE', 'github', 'microsoft'),
  email: fc.oneof(known('admin.email', 'user.email'), fc.constant(new Known('user.email', ' %s')), fc.constant(new Known('user.email', '%s.'))),
  password: known('password'),
  current_password: known('password'),
  refresh_token: known('user.refreshToken', 'user.spentRefreshToken', 'user.token', 'token.mfa'),
  mfa_token: known('token.mfa', 'user.token', 'user.refreshToken', 'token.expired'),
  user_id: known('admin.id', 'user.id'),
  actor_id: known('admin.id', 'user.id'),
  device_id: known('device.deviceId'),
  directoryId: known('directory.id'),
  sort: fc.array(fc.tuple(fc.constantFrom('', '-'), fc.constantFrom(...FIELD_NAMES)), { minLength: 1, maxLength: 3 })
    .map((parts) => parts.map(([direction, name]) => `${direction}${name}`).join(',')),
  fields: fc.array(fc.constantFrom(...FIELD_NAMES), { minLength: 1, maxLength: 3 }).map((names) => names.join(',')),
  cursor: fc.constant(''),
  createdAfter: fc.tuple(instant, fc.boolean())
    .map(([date, dateOnly]) => dateOnly ? date.toISOString().slice(0, 10) : date.toISOString())
}

/** The generator's options for an operation: its `{id}` mostly one of the resource it names. */
function generatorFor (operation: Operation): SchemaArbitraryOptions {
  const own: KnownName[] = operation.path.startsWith('/api/v1/users/{id}')
    ? ['user.id', 'admin.id']
    : operation.path.startsWith('/api/v1/posts/{id}') ? ['post.id', 'draft.id'] : ['user.sessionId']
  return {
    formats: {
      uuid: fc.oneof(fc.uuid(), fc.uuid({ version: 7 })),
      email: fc.emailAddress(),
      // Webhook endpoints: no test resolves a name or reaches an address but loopback (loopbackResolver).
      uri: fc.webUrl(),
      'date-time': instant.map((date) => date.toISOString())
    },
    hints: { ...HINTS, id: fc.oneof({ weight: 3, arbitrary: known(...own) }, { weight: 1, arbitrary: known(...IDS) }) }
  }
}

const TOKENS: KnownName[] = ['admin.token', 'user.token', 'user.refreshToken', 'user.spentRefreshToken', 'token.none', 'token.foreign', 'token.expired', 'token.unknownUser', 'token.mfa']

/** Authorization headers other than the caller's own: other schemes, broken and forged tokens. */
const authorizationHeader = fc.oneof(
  fc.constantFrom('Bearer', 'Bearer ', 'bearer', 'Basic YWRtaW46YWRtaW4=', 'Bearer null', 'Bearer a.b.c', 'Bearer ..', 'Token abc'),
  fc.tuple(fc.constantFrom(...TOKENS), fc.constantFrom('Bearer %s', 'bearer %s', 'Bearer  %s', 'Bearer %sx', 'Bearer %s.', '%s', 'Bearer %s, Bearer %s'))
    .map(([name, template]) => new Known(name, template)),
  headerValue.map((value) => `Bearer ${value}`),
  headerValue
)

const extraHeader = fc.oneof(
  fc.tuple(fc.constant('authorization'), authorizationHeader),
  fc.tuple(fc.constant('user-agent'), headerValue),
  fc.tuple(fc.constant('x-device-id'), fc.oneof(headerValue, known('device.deviceId'))),
  fc.tuple(fc.constant('origin'), fc.oneof(fc.constantFrom('http://localhost:3000', 'http://evil.example', 'null'), headerValue)),
  fc.tuple(fc.constant('accept'), fc.oneof(fc.constantFrom('application/json', 'text/html', '*/*', 'application/xml'), headerValue)),
  fc.tuple(fc.constant('x-forwarded-for'), fc.oneof(fc.constantFrom('10.0.0.1', '192.168.1.10', '::1', '1.2.3.4, 10.0.0.1'), headerValue)),
  fc.tuple(fc.constantFrom('cookie', 'accept-language', 'x-http-method-override', 'x-fuzz'), headerValue)
)

/** `directory`: a SCIM directory's token, for the SCIM operations. */
type Caller = 'anonymous' | 'user' | 'admin' | 'directory'

interface PathSegment {
  value: unknown
  /** Sent as is (traversal, separators, broken escapes) rather than percent-encoded. */
  raw: boolean
}

type BodyPart =
  | { kind: 'none' }
  | { kind: 'json', value: unknown }
  | { kind: 'text', text: string | Buffer }

interface GeneratedRequest {
  caller: Caller
  path: Record<string, PathSegment>
  query: Array<[string, unknown]>
  /** A query string sent as is, after the generated parameters. */
  rawQuery: string
  body: BodyPart
  contentType: string | null
  headers: Array<[string, unknown]>
}

function pathArbitrary (
  operation: Operation,
  generator: SchemaArbitraryOptions
): fc.Arbitrary<Record<string, PathSegment>> {
  const valid = validValue(parametersSchema(operation.pathParameters), generator) as
    fc.Arbitrary<Record<string, unknown>>
  // Per parameter, null keeps the valid value.
  const replacements = operation.pathParameters.map((parameter) => fc.oneof(
    { weight: 8, arbitrary: fc.constant(null) },
    { weight: 2, arbitrary: hostileString.map((value): PathSegment => ({ value, raw: false })) },
    {
      weight: 2,
      arbitrary: tainted(validValue(parameter.schema, generator)).map((value): PathSegment => ({ value, raw: false }))
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...boundaryValues(parameter.schema), '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-7FFF-BFFF-FFFFFFFFFFFF')
        .map((value): PathSegment => ({ value, raw: false }))
    },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_PATH_SEGMENTS).map((value): PathSegment => ({ value, raw: true })) }
  ))
  return fc.tuple(valid, fc.tuple(...replacements)).map(([values, replaced]) =>
    Object.fromEntries(operation.pathParameters.map((parameter, index) =>
      [parameter.name, replaced[index] ?? { value: values[parameter.name], raw: false }])))
}

function queryArbitrary (
  operation: Operation,
  generator: SchemaArbitraryOptions
): fc.Arbitrary<Array<[string, unknown]>> {
  const schema = parametersSchema(operation.queryParameters)
  const valid = (validValue(schema, generator) as fc.Arbitrary<Record<string, unknown>>)
    .map((values) => Object.entries(values))
  const unknownKey = fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, '__proto__[admin]', 'constructor[prototype][admin]', 'a[]', ''), hostileString)
  const mutations: Array<fc.WeightedArbitrary<Array<[string, unknown]>>> = [
    {
      weight: 1,
      arbitrary: fc.tuple(valid, unknownKey, hostileValue).map(([entries, key, value]) => [...entries, [key, value]])
    }
  ]
  if (operation.queryParameters.length > 0) {
    const replaced = fc.oneof(...operation.queryParameters.map((parameter) =>
      fc.tuple(fc.constant(parameter.name), replacementFor(parameter.schema, generator))))
    mutations.push({
      weight: 3,
      arbitrary: fc.tuple(valid, replaced)
        .map(([entries, [name, value]]) => [...entries.filter(([key]) => key !== name), [name, value]])
    })
    mutations.push({
      weight: 1,
      arbitrary: valid.filter((entries) => entries.length > 0).map((entries) => [...entries, ...entries])
    })
  }
  return fc.oneof({ weight: 2, arbitrary: valid }, { weight: 3, arbitrary: fc.oneof(...mutations) })
}

function bodyArbitrary (operation: Operation, generator: SchemaArbitraryOptions): fc.Arbitrary<BodyPart> {
  const text = hostileBodyText(BODY_LIMIT_BYTES).map((text): BodyPart => ({ kind: 'text', text }))
  const anyJson = hostileValue.map((value): BodyPart => ({ kind: 'json', value }))
  if (operation.body === null) {
    return fc.oneof({ weight: 6, arbitrary: fc.constant<BodyPart>({ kind: 'none' }) }, { weight: 1, arbitrary: anyJson }, { weight: 1, arbitrary: text })
  }
  return fc.oneof(
    { weight: 2, arbitrary: validValue(operation.body, generator).map((value): BodyPart => ({ kind: 'json', value })) },
    { weight: 5, arbitrary: mutatedObject(operation.body, generator).map((value): BodyPart => ({ kind: 'json', value })) },
    { weight: 1, arbitrary: anyJson },
    { weight: 2, arbitrary: text },
    { weight: 1, arbitrary: fc.constant<BodyPart>({ kind: 'none' }) }
  )
}

function requestArbitrary (operation: Operation): fc.Arbitrary<GeneratedRequest> {
  const generator = generatorFor(operation)
  return fc.record({
    caller: operation.path.startsWith('/scim/')
      ? fc.constantFrom<Caller>('directory', 'directory', 'anonymous', 'user')
      : fc.constantFrom<Caller>('anonymous', 'user', 'admin'),
    path: pathArbitrary(operation, generator),
    query: queryArbitrary(operation, generator),
    rawQuery: fc.oneof({ weight: 8, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('&&&', '=', '==1', '%', '%zz=1', 'page', 'page=', 'a=%ED%A0%80', 'limit=1&limit=2', '?', 'a=b=c', '%00=%00') }),
    body: bodyArbitrary(operation, generator),
    contentType: fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentType }),
    headers: fc.oneof(
      { weight: 3, arbitrary: fc.constant<Array<[string, unknown]>>([]) },
      { weight: 1, arbitrary: fc.array<[string, unknown]>(extraHeader, { minLength: 1, maxLength: 3 }) }
    )
  })
}

function queryValueText (value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(queryValueText)
  if (value === null) return ['']
  return [typeof value === 'object' ? JSON.stringify(value) : String(value)]
}

/** The generated request as `app.inject` takes it, Known values looked up. */
function toInjectOptions (
  operation: Operation,
  generated: GeneratedRequest,
  fixtures: Fixtures
): InjectOptions & { url: string, headers: Record<string, string> } {
  const path = operation.path.replace(/\{(\w+)\}/g, (_match, name: string) => {
    const segment = generated.path[name] ?? { value: '', raw: true }
    const text = String(fixtures.resolve(segment.value))
    return segment.raw ? text : encodeUrlText(text)
  })
  const query = (fixtures.resolve(generated.query) as Array<[string, unknown]>)
    .flatMap(([key, value]) => queryValueText(value).map((text) => `${encodeUrlText(key)}=${encodeUrlText(text)}`))
  if (generated.rawQuery !== '') query.push(generated.rawQuery)
  const headers: Record<string, string> = {}
  const callerToken = { anonymous: null, admin: 'admin.token', user: 'user.token', directory: 'directory.token' } as const
  const token = callerToken[generated.caller]
  if (token !== null) headers.authorization = `Bearer ${fixtures.get(token)}`
  if (generated.body.kind !== 'none' || generated.contentType !== 'application/json') {
    if (generated.contentType !== null) headers['content-type'] = generated.contentType
  }
  for (const [name, value] of generated.headers) headers[name] = String(fixtures.resolve(value))
  const options = { method: operation.method as InjectOptions['method'], url: query.length > 0 ? `${path}?${query.join('&')}` : path, headers }
  if (generated.body.kind === 'json') return { ...options, payload: JSON.stringify(fixtures.resolve(generated.body.value)) }
  if (generated.body.kind === 'text') return { ...options, payload: generated.body.text }
  return options
}

/**
 * The stored data: every table's rows (as JSON), except the audit log's. The service only
 * appends to that one (its repository inserts, and purges entries past retention), and read
 * whole for every case it would cost more than the case: of it, the row count and the rows
 * written since a given instant.
 */
interface Snapshot {
  tables: Map<string, Set<string>>
  auditCount: number
  auditSince: Json[]
  /** Before the snapshot's flush: every entry it counts was recorded at or before this. */
  takenAt: number
  /** On SQLite, the rows its one connection had written (`total_changes()`); null on PostgreSQL. */
  writes: number | null
  /** On PostgreSQL, each table's rows hashed (TableReads.digests); null on SQLite. */
  digests: Json | null
}

async function tableNames (app: FastifyInstance): Promise<string[]> {
  const tables = await app.database.db.introspection.getTables({ withInternalKyselyTables: true })
  // On PostgreSQL the listing covers every schema: only this test's own (its search path) counts.
  const own = app.database.dialect === 'postgres'
    ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(app.database.db)).rows[0]?.schema
    : undefined
  return tables.filter((table) => own === undefined || table.schema === own).map((table) => table.name).filter((name) => name !== 'audit_logs')
}

/**
 * A snapshot's reads, compiled once: every table's rows (on SQLite they then run straight on the
 * driver, database.ts), and on PostgreSQL one statement hashing every table's rows, so that a
 * snapshot reads only the tables whose hash moved (a round trip per table made PostgreSQL's
 * cases several times SQLite's).
 */
interface TableReads {
  rows: Array<readonly [string, CompiledQuery<Json>]>
  digests: CompiledQuery<Json> | null
}

async function tableReads (app: FastifyInstance): Promise<TableReads> {
  const { db, dialect } = app.database
  const names = await tableNames(app)
  // The audit log's maintained count moves with its entries, which are checked below.
  const source = (table: string) => table === 'collection_counts'
    ? sql`(select * from collection_counts where name <> 'audit_logs')`
    : sql.table(table)
  const digest = (table: string) =>
    sql`(select md5(coalesce(string_agg(x::text, ',' order by x::text), '')) from ${source(table)} as x) as ${sql.id(table)}`
  return {
    rows: names.map((table) => [table, sql<Json>`select * from ${source(table)} as x`.compile(db)] as const),
    digests: dialect === 'postgres' ? sql<Json>`select ${sql.join(names.map(digest))}`.compile(db) : null
  }
}

/**
 * The stored data as it is now; when `previous` is given and nothing was written since it (on
 * SQLite, whose in-memory database is one connection that counts every row it writes), that
 * snapshot again without reading every table: most cases are refusals that write nothing.
 */
async function snapshot (
  app: FastifyInstance, tables: TableReads, since: Date, previous?: Snapshot
): Promise<Snapshot> {
  // Work done after the answer (message delivery) finishes first,
  // so that what an earlier request caused is not taken for this one's doing.
  await app.services.outbox.deliverDue()
  const takenAt = Date.now()
  // Audit entries are written in batches off the request path: write what is waiting.
  await app.auditTrail.flush()
  const { db, readRows } = app.database
  const writes = app.database.dialect === 'sqlite'
    ? Number((await readRows(sql<Json>`select total_changes() as writes`.compile(db)))[0]?.writes)
    : null
  if (previous !== undefined && writes !== null && writes === previous.writes) {
    return { ...previous, auditSince: [], takenAt }
  }
  const digests = tables.digests === null ? null : (await readRows(tables.digests))[0] ?? null
  const kept = (table: string) => digests !== null && previous?.digests?.[table] === digests[table]
    ? previous?.tables.get(table)
    : undefined
  const [rows, [count], recent] = await Promise.all([
    Promise.all(tables.rows.map(async ([table, query]) =>
      [table, kept(table) ?? new Set((await readRows(query)).map((row) => JSON.stringify(row)))] as const)),
    readRows(db.selectFrom('audit_logs').select((eb) => eb.fn.countAll().as('count')).compile()),
    readRows(db.selectFrom('audit_logs').selectAll().where('created_at', '>=', since.toISOString()).compile())
  ])
  return { tables: new Map(rows), auditCount: Number(count?.count), auditSince: recent, takenAt, writes, digests }
}

/**
 * Fails unless every change between the snapshots is one docs/api.md has a refusal write
 * (`after` taken since the request was sent).
 */
function assertRefusalWroteNothing (operationKey: string, before: Snapshot, after: Snapshot, label: string): void {
  const permitted = permittedWrites(operationKey)
  for (const [table, rows] of after.tables) {
    const previous = before.tables.get(table) ?? new Set<string>()
    const added = [...rows].filter((row) => !previous.has(row))
    const removed = [...previous].filter((row) => !rows.has(row))
    if (added.length === 0 && removed.length === 0) continue
    if (permitted.changed.includes(table)) continue
    assert.deepEqual(
      { table, added: permitted.appended.includes(table) ? [] : added, removed },
      { table, added: [], removed: [] },
      `${label}: a refused request changed stored data`
    )
  }
  assert.equal(after.auditCount, before.auditCount + after.auditSince.length, `${label}: audit entries removed`)
  assert.deepEqual(after.auditSince.filter((entry) => !permitted.auditEvents.includes(entry.event)), [], `${label}: a refused request wrote audit entries`)
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** The checkout's own directory, installed packages, module URLs and source positions. */
const INTERNAL_PATH = new RegExp(`${escapeRegExp(dirname(dirname(import.meta.dirname)))}|/node_modules/|file://|\\.[jt]s:\\d+`)

/** Fails unless the response keeps the rules of docs/api.md. */
function assertResponse (
  operation: Operation,
  sent: ReturnType<typeof toInjectOptions>,
  response: LightMyRequestResponse,
  label: string,
  fixtures: Fixtures,
  providerBase: string
): void {
  const status = response.statusCode
  assert.ok(status < 500, `${label}: a server error`)
  // The public keys may be cached (docs/api.md, "Signing keys"); nothing else may. Discovery
  // may be too, but not here: without JWT_ISSUER it is built on the request's Host header.
  const expected = status === 200 && operation.path === '/.well-known/jwks.json' ? { ...SECURITY_HEADERS, 'cache-control': 'public, max-age=300' } : SECURITY_HEADERS
  for (const [name, value] of Object.entries(expected)) assert.equal(response.headers[name], value, `${label}: header ${name}`)
  assert.ok(!('server' in response.headers) && !('x-powered-by' in response.headers), `${label}: Server or X-Powered-By sent`)

  const body = response.body
  for (const secret of [TEST_SECRET, fixtures.get('password')]) assert.ok(!body.includes(secret), `${label}: a secret or password in the body`)
  assert.doesNotMatch(body, /pbkdf2-sha256\$/, `${label}: a password hash in the body`)
  assert.doesNotMatch(body, /\n\s+at |\bat [\w.<>]+ \(|(?:Type|Syntax|Reference|Range)Error\b|FST_ERR|SQLITE_/, `${label}: a stack trace or library text in the body`)
  assert.doesNotMatch(body, INTERNAL_PATH, `${label}: an internal path in the body`)

  // A mangled path may land on another route or on none; only a request that reached this
  // operation must answer one of its documented statuses.
  const routedHere = new RegExp(`^${operation.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(new URL(sent.url, 'http://local').pathname)
  if (routedHere) assert.ok(operation.statuses.has(status), `${label}: status ${status} is not documented for ${operation.key}`)

  if (status === 302) {
    assert.ok(String(response.headers.location).startsWith(`${providerBase}/`), `${label}: a redirect elsewhere than the configured provider`)
    return
  }
  if (status === 204) {
    assert.equal(body, '', `${label}: a 204 with a body`)
    return
  }
  // A page for people: HTML, in which nothing the request sent comes back unescaped.
  if (operation.page && status === 200) {
    assert.match(String(response.headers['content-type']), /^text\/html/, `${label}: not HTML`)
    assert.doesNotMatch(body, /<script|<[a-z]+[^>]*\son\w+=/i, `${label}: a script or an event handler in the page`)
    for (const [, value] of new URLSearchParams(new URL(sent.url, 'http://local').search)) {
      if (/[<>"']/.test(value)) assert.ok(!body.includes(value), `${label}: ${JSON.stringify(value)} sent back unescaped`)
    }
    return
  }
  // A SCIM route answers in SCIM's media type; a request the router refused before any route
  // (an unknown path, a URL it cannot decode) gets the error envelope, checked below.
  if (operation.path.startsWith('/scim/') && String(response.headers['content-type']).startsWith('application/scim+json')) {
    assertScimAnswer(response, label)
    return
  }
  assert.match(String(response.headers['content-type']), /^application\/json/, `${label}: not JSON`)
  const json = JSON.parse(body) as Json
  if (status < 400) return

  assert.deepEqual(Object.keys(json), ['error'], `${label}: not the error envelope`)
  const { code, message, details } = json.error as Json
  assert.ok(typeof code === 'string' && typeof message === 'string', `${label}: error without code and message`)
  assert.deepEqual(Object.keys(json.error).filter((key) => !['code', 'message', 'details'].includes(key)), [], `${label}: unknown keys in the error`)
  assert.equal(ERROR_STATUS[code], status, `${label}: code ${code} with status ${status}`)
  assert.match(message, ERROR_MESSAGE[code] ?? /./, `${label}: message of ${code}`)
  if (code === 'VALIDATION_FAILED') {
    assert.ok(Array.isArray(details) && details.length > 0, `${label}: a validation failure without details`)
    for (const detail of details) {
      assert.deepEqual(Object.keys(detail).sort(), ['message', 'path'], `${label}: detail shape`)
      assert.ok(typeof detail.path === 'string' && typeof detail.message === 'string', `${label}: detail types`)
    }
  } else {
    assert.equal(details, undefined, `${label}: details outside a validation failure`)
  }
  if (status === 429) assert.ok(response.headers['retry-after'] !== undefined, `${label}: 429 without Retry-After`)
  // Error bodies never repeat what they refuse: no password sent in this request shows up.
  const sentPasswords = sent.payload === undefined ? [] : [...String(sent.payload).matchAll(/"(?:current_)?password":"([^"]{12,})"/g)].map((match) => match[1] ?? '')
  for (const password of sentPasswords) assert.ok(!body.includes(password), `${label}: the request's password in the error`)
}

/** A SCIM answer (docs/api.md, "SCIM provisioning"): SCIM's media type; an error in SCIM's error body. */
function assertScimAnswer (response: LightMyRequestResponse, label: string): void {
  assert.match(String(response.headers['content-type']), /^application\/scim\+json/, `${label}: not SCIM's media type`)
  const json = JSON.parse(response.body) as Json
  if (response.statusCode < 400) return
  assert.deepEqual(json.schemas, ['urn:ietf:params:scim:api:messages:2.0:Error'], `${label}: not SCIM's error body`)
  assert.equal(json.status, String(response.statusCode), `${label}: the status in the body`)
  assert.ok(typeof json.detail === 'string' && json.detail !== '', `${label}: an error without detail`)
  assert.deepEqual(Object.keys(json).filter((key) => !['schemas', 'status', 'scimType', 'detail'].includes(key)), [], `${label}: unknown keys`)
}

function describe (
  sent: ReturnType<typeof toInjectOptions>,
  caller: Caller,
  response?: LightMyRequestResponse
): string {
  const payload = sent.payload === undefined ? '' : ` body ${String(sent.payload).slice(0, 300)}`
  const answer = response === undefined ? '' : ` -> ${response.statusCode} ${response.body.slice(0, 300)}`
  return `${sent.method} ${sent.url.slice(0, 300)} as ${caller} headers ${JSON.stringify(sent.headers).slice(0, 300)}${payload}${answer}`
}

// A fixed number of cases per operation: on a busy two-core machine the two backends take longer
// than the suite's default timeout (4.9 minutes were seen in a clean CI run with 89 operations).
t.setTimeout(600_000)

for (const backend of backends()) {
  t.test(`fuzzing every documented operation (${backend.name})`, async (t) => {
    // No request may leave the machine: the service's only outbound calls (OAuth) are refused
    // and recorded here, and the one configured provider is a local one that must hear nothing.
    const outbound: string[] = []
    const realFetch = globalThis.fetch
    globalThis.fetch = async (input) => {
      outbound.push(input instanceof Request ? input.url : String(input))
      throw new Error('outbound request during fuzzing')
    }
    t.teardown(() => { globalThis.fetch = realFetch })
    const provider = await new TestProvider({ id: 'fuzz-client', secret: 'fuzz-secret', redirectUri: 'http://127.0.0.1:3000/callback' }).start()
    t.teardown(async () => await provider.stop())
    const app = await build(t, {
      postgresUrl: backend.url,
      env: {
        // Pairs kept for refresh retries are erased on a timer, a write no request makes, which
        // would land inside whichever case runs then: off here.
        REFRESH_RETRY_WINDOW_S: '0',
        OAUTH_GOOGLE_CLIENT_ID: 'fuzz-client',
        OAUTH_GOOGLE_CLIENT_SECRET: 'fuzz-secret',
        OAUTH_GOOGLE_REDIRECT_URI: 'http://127.0.0.1:3000/callback',
        OAUTH_GOOGLE_AUTH_URL: `${provider.base}/authorize`,
        OAUTH_GOOGLE_TOKEN_URL: `${provider.base}/token`,
        OAUTH_GOOGLE_USERINFO_URL: `${provider.base}/userinfo`
      }
    })
    const operations = operationsOf(app.swagger() as unknown as Json)
    const fixtures = await Fixtures.create(app)
    const tables = await tableReads(app)
    let baseline = await snapshot(app, tables, new Date())
    const runs = backend.url === null ? RUNS : Math.max(1, Math.round(RUNS * POSTGRES_SHARE))
    t.comment(`seed ${SEED} (FUZZ_SEED), ${runs} cases per operation (FUZZ_RUNS=${RUNS})`)

    t.ok(operations.length > 0, 'the document lists operations')
    const fuzzed = new Set<string>()
    let cases = 0
    const started = Date.now()
    for (const [index, operation] of operations.entries()) {
      const property = fc.asyncProperty(requestArbitrary(operation), async (generated) => {
        const sent = toInjectOptions(operation, generated, fixtures)
        // A later millisecond than any entry the baseline counts, so none is counted twice.
        await clockPast(baseline.takenAt)
        const sentAt = new Date()
        let response: LightMyRequestResponse | undefined
        let after: Snapshot | undefined
        try {
          response = await within(describe(sent, generated.caller), REQUEST_TIMEOUT_MS, app.inject(sent))
          const label = describe(sent, generated.caller, response)
          assertResponse(operation, sent, response, label, fixtures, provider.base)
          after = await snapshot(app, tables, sentAt, baseline)
          if (response.statusCode >= 400) assertRefusalWroteNothing(operation.key, baseline, after, label)
        } finally {
          // A success may change data and remove what later cases aim at; a failing case
          // leaves its writes behind. Either way the next case compares against the present.
          if ((response === undefined || response.statusCode < 400) && await fixtures.repair()) after = undefined
          baseline = after ?? await snapshot(app, tables, new Date())
        }
      })
      const details = await fc.check(property, { numRuns: runs, seed: SEED + index })
      cases += details.numRuns
      if (details.numRuns > 0) fuzzed.add(operation.key)
      t.notOk(details.failed, `${operation.key}: ${details.numRuns} cases`, details.failed
        ? { failure: String(details.errorInstance).slice(0, 4000), report: fc.defaultReportMessage(details)?.slice(0, 4000) ?? '' }
        : {})
    }

    t.equal(fuzzed.size, operations.length, 'every operation of the document was fuzzed')
    t.same(outbound, [], 'no outbound request')
    t.same(provider.requests, [], 'the local provider heard nothing: no state was ever accepted')
    t.comment(`fuzz cases: ${cases} across ${fuzzed.size} operations (of ${operations.length} in the document) in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  })
}
