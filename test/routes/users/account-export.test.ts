import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import t from 'tap'
import { AccountExportResponseSchema, EXPORT_LIMITS, EXPORT_SECTIONS } from '../../../schemas/account-export.js'
import { components } from '../../../schemas/components.js'
import { EMAIL_PATTERN } from '../../../schemas/user.js'
import { hashToken } from '../../../src/security/tokens.js'
import { type Account, createAccount, withToken } from '../../helpers/accounts.js'
import { build, TEST_SECRET } from '../../helpers/app.js'
import { backends } from '../../helpers/database.js'
import { uniqueSlug } from '../../helpers/organizations.js'
import { SoftwareAuthenticator } from '../../helpers/webauthn-authenticator.js'

/** The account export through the API (docs/api.md, "Account export"). */

type Json = Record<string, any>

// The formats the schemas use, as the service's validators read them, for TypeBox's Value.Check.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', (value) => UUID.test(value))
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)))
if (!FormatRegistry.Has('email')) FormatRegistry.Set('email', (value) => new RegExp(EMAIL_PATTERN).test(value))

const EXPORT_URL = '/api/v1/users/me/export'

async function exportOf (app: FastifyInstance, token: string) {
  return await app.inject(withToken(token, { method: 'GET', url: EXPORT_URL }))
}

/** The answer checked against the route's own response schema, with the components it refers to. */
function schemaProblems (body: unknown): string[] {
  const references = components()
  return Value.Check(AccountExportResponseSchema, references, body)
    ? []
    : [...Value.Errors(AccountExportResponseSchema, references, body)].map((error) => `${error.path}: ${error.message}`)
}

async function call (app: FastifyInstance, account: Account, method: 'POST' | 'PATCH', url: string, payload: Json) {
  const response = await app.inject(withToken(account.token, { method, url, payload }))
  if (response.statusCode >= 300) throw new Error(`${method} ${url}: ${response.body}`)
  return response.json().data
}

async function login (app: FastifyInstance, account: Account, device?: Json) {
  const response = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: account.email, password: account.password, ...(device !== undefined && { device }) } })
  if (response.statusCode !== 200) throw new Error(response.body)
  return response.json().data as { access_token: string, refresh_token: string }
}

async function addPasskey (app: FastifyInstance, account: Account) {
  const options = await app.inject(withToken(account.token, { method: 'POST', url: '/api/v1/auth/passkeys/registration/options' }))
  if (options.statusCode !== 200) throw new Error(options.body)
  return await call(app, account, 'POST', '/api/v1/auth/passkeys', { response: new SoftwareAuthenticator().register(options.json().data), name: 'Security key' })
}

/** Turns TOTP on: its secret and backup codes. */
async function enableTotp (app: FastifyInstance, account: Account) {
  const { secret } = await call(app, account, 'POST', '/api/v1/auth/mfa/totp/setup', {})
  const { backup_codes: backupCodes } = await call(app, account, 'POST', '/api/v1/auth/mfa/totp/enable', { code: generateSync({ secret }) })
  return { secret: secret as string, backupCodes: backupCodes as string[] }
}

/** A post by `author` and their comment on it. */
async function writes (app: FastifyInstance, author: Account, title: string, status: 'draft' | 'published') {
  const post = await call(app, author, 'POST', '/api/v1/posts', { title, body: `${title}: the body`, status })
  const comment = await call(app, author, 'POST', `/api/v1/posts/${post.id as string}/comments`, { body: `A comment under ${title}` })
  return { post, comment }
}

for (const backend of backends()) {
  t.test(`account export (${backend.name})`, async (t) => {
    t.test('an account with every kind of data: each section holds it, the schema holds, and no secret leaves', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const { db } = app.database
      const ada = await createAccount(app, { name: 'Ada Exporter' })
      const bob = await createAccount(app, { name: 'Bob Bystander' })

      // Sessions: the first (createAccount's), one on a named device that signs out, one live.
      const laptop = await login(app, ada, { id: 'laptop-7f3a', name: 'Work laptop' })
      t.equal((await app.inject(withToken(laptop.access_token, { method: 'POST', url: '/api/v1/auth/logout' }))).statusCode, 204)
      const phoneSession = await login(app, ada, { id: 'phone-1', name: 'Phone' })
      const device = await call(app, ada, 'POST', `/api/v1/users/${ada.id}/devices`, { device_id: 'laptop-7f3a', name: 'Work laptop' })
      await app.repositories.identities.link('github', 'gh-ada-1815', ada.id, 'ada@github.example')
      const passkey = await addPasskey(app, ada)
      await call(app, ada, 'PATCH', `/api/v1/users/${ada.id}`, { phone: '+14155550123' })
      const { secret: totpSecret, backupCodes } = await enableTotp(app, ada)
      const owned = await call(app, ada, 'POST', '/api/v1/organizations', { name: 'Analytical Engines', slug: uniqueSlug('engines') })
      const bobs = await call(app, bob, 'POST', '/api/v1/organizations', { name: 'Bob Works', slug: uniqueSlug('bob') })
      await db.insertInto('organization_members').values({ organization_id: bobs.id, user_id: ada.id, role: 'member', created_at: new Date().toISOString() }).execute()
      const bobsWrites = await writes(app, bob, 'Bob post', 'published')
      const adas = await writes(app, ada, 'Ada post', 'published')
      const draft = await call(app, ada, 'POST', '/api/v1/posts', { title: 'Ada draft', body: 'Not yet', status: 'draft' })
      // Ada comments on Bob's post; Bob comments on Ada's, and has data of every kind too.
      const adaOnBob = await call(app, ada, 'POST', `/api/v1/posts/${bobsWrites.post.id}/comments`, { body: 'Ada on Bob' })
      const bobOnAda = await call(app, bob, 'POST', `/api/v1/posts/${adas.post.id}/comments`, { body: 'Bob on Ada' })
      await call(app, bob, 'POST', `/api/v1/users/${bob.id}/devices`, { device_id: 'bob-desktop', name: 'Bob desktop' })
      await app.repositories.identities.link('github', 'gh-bob-42', bob.id, 'bob@github.example')
      // An administrator's action on Ada, whose entry is Bob's (its actor's), not hers.
      await db.insertInto('user_roles').values({ user_id: bob.id, role: 'admin', created_at: new Date().toISOString() }).execute()
      app.repositories.users.invalidate(bob.id)
      await call(app, bob, 'PATCH', `/api/v1/users/${ada.id}`, { name: 'Ada Renamed' })
      // A suspension that has passed its end, with a reason and an administrator she is not shown.
      const suspendedAt = new Date(Date.now() - 3 * 86_400_000).toISOString()
      const suspendedUntil = new Date(Date.now() - 86_400_000).toISOString()
      await db.updateTable('users').set({ suspended_at: suspendedAt, suspended_until: suspendedUntil, suspension_reason: 'Confidential moderation note', suspended_by: bob.id })
        .where('id', '=', ada.id).execute()

      const answer = await exportOf(app, ada.token)
      t.equal(answer.statusCode, 200, answer.body)
      t.equal(answer.headers['cache-control'], 'no-store')
      const body = answer.json()
      t.same(schemaProblems(body), [], 'the document is what the route\'s schema says')
      const data = body.data as Json
      t.same(Object.keys(data), ['exported_at', 'user', ...EXPORT_SECTIONS, 'truncated'])
      t.ok(Math.abs(Date.parse(data.exported_at) - Date.now()) < 60_000, 'exported now')

      t.same(data.user, {
        id: ada.id,
        email: ada.email,
        email_verified: true,
        name: 'Ada Renamed',
        created_at: data.user.created_at,
        roles: ['user'],
        permissions: ['read', 'create', 'write', 'update', 'delete'],
        mfa_enabled: true,
        mfa_methods: ['totp'],
        phone: '+14155550123',
        suspension: { suspended_at: suspendedAt, until: suspendedUntil }
      }, 'the profile, with the suspension\'s dates only')

      const sessions = data.sessions as Json[]
      t.equal(sessions.length, 3, 'every session, the ended one too')
      t.same(sessions.map((session) => session.created_at), [...sessions.map((session) => session.created_at)].sort().reverse(), 'newest first')
      t.match(sessions.find((session) => session.device.name === 'Work laptop'), { device: { id: 'laptop-7f3a', name: 'Work laptop' }, revoked_reason: 'logout' })
      t.match(sessions.find((session) => session.device.name === 'Phone'), { revoked_at: null, revoked_reason: null })
      t.same(data.devices, [device])
      t.match(data.identities, [{ provider: 'github', subject: 'gh-ada-1815', email: 'ada@github.example' }])
      t.same(Object.keys(data.identities[0]).sort(), ['created_at', 'email', 'id', 'provider', 'subject'])
      t.same(data.passkeys, [{ ...passkey, last_used_at: null }])
      t.same(Object.keys(data.passkeys[0]).sort(), ['created_at', 'id', 'last_used_at', 'name'], 'a passkey as its list shows it')
      const memberships = data.memberships as Json[]
      t.same(memberships.map((membership) => [membership.organization_id, membership.name, membership.role]).sort(), [
        [owned.id, 'Analytical Engines', 'owner'], [bobs.id, 'Bob Works', 'member']
      ].sort())
      const ownership = memberships.find((membership) => membership.organization_id === owned.id)
      t.match(ownership, { slug: owned.slug, joined_at: String })
      t.same(data.posts, [draft, adas.post], 'her posts, drafts too, newest first')
      t.same(data.comments.map((comment: Json) => comment.id).sort(), [adas.comment.id, adaOnBob.id].sort(), 'her comments, on anyone\'s post')
      const audit = data.audit_entries as Json[]
      t.ok(audit.length > 5)
      t.ok(audit.every((entry) => entry.actor_id === ada.id), 'entries of what she did')
      const events = new Set(audit.map((entry) => entry.event))
      for (const event of ['user.created', 'auth.login', 'auth.logout', 'device.added', 'passkey.added', 'mfa.enabled', 'organization.created']) {
        t.ok(events.has(event), `her ${event}`)
      }
      t.same(data.truncated, [])

      // No secret of hers, and nothing of Bob's.
      const text = answer.body
      const [stored] = await db.selectFrom('users').select(['password_hash', 'totp_secret']).where('id', '=', ada.id).execute()
      const refreshHashes = await db.selectFrom('refresh_tokens').select('token_hash').where('user_id', '=', ada.id).execute()
      const codeHashes = await db.selectFrom('mfa_backup_codes').select('code_hash').where('user_id', '=', ada.id).execute()
      const passkeyRows = await db.selectFrom('passkeys').select(['public_key', 'credential_id']).where('user_id', '=', ada.id).execute()
      const secrets: Array<[string, string]> = [
        ['the password', ada.password],
        ['the password hash', stored?.password_hash ?? 'none'],
        ['the TOTP secret', totpSecret],
        ['the TOTP secret as stored', stored?.totp_secret ?? 'none'],
        ['an access token', ada.token],
        ['an access token', phoneSession.access_token],
        ...[laptop.refresh_token, phoneSession.refresh_token].flatMap((token): Array<[string, string]> =>
          [['a refresh token', token], ['a refresh token\'s hash', hashToken(token)]]),
        ...refreshHashes.map((row): [string, string] => ['a stored refresh-token hash', row.token_hash]),
        ...backupCodes.map((code): [string, string] => ['a backup code', `"${code}"`]),
        ...codeHashes.map((row): [string, string] => ['a backup code hash', row.code_hash]),
        ...passkeyRows.flatMap((row): Array<[string, string]> => [['a passkey public key', row.public_key], ['a credential id', row.credential_id]]),
        ['the signing secret', TEST_SECRET],
        ['the suspension reason', 'Confidential moderation note'],
        ['Bob\'s id (the administrator who suspended her, renamed her)', bob.id],
        ['Bob\'s address', bob.email],
        ['Bob\'s post', 'Bob post'],
        ['Bob\'s comment on her post', bobOnAda.body],
        ['Bob\'s identity', 'gh-bob-42'],
        ['Bob\'s device', 'Bob desktop']
      ]
      t.ok(refreshHashes.length >= 3 && codeHashes.length === 10 && passkeyRows.length === 1, 'the secrets looked for exist')
      for (const [what, secret] of secrets) t.notOk(text.includes(secret), `no ${what} in the export`)

      // Audited, and the next export lists that entry.
      const exported = await db.selectFrom('audit_logs').selectAll().where('event', '=', 'user.exported').execute()
      t.equal(exported.length, 1)
      t.match(exported[0], { actor_id: ada.id, target_id: ada.id, outcome: 'success' })
      t.same(JSON.parse(exported[0]?.details ?? '{}'), { items: 3 + 1 + 1 + 1 + 2 + 2 + 2 + audit.length, truncated: [] })
      const again = (await exportOf(app, ada.token)).json().data
      t.equal(again.audit_entries[0].event, 'user.exported', 'the latest entry: the export before')
    })

    t.test('a list past its limit holds its latest items, and says it was cut', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const ada = await createAccount(app)
      const limit = EXPORT_LIMITS.devices
      const start = Date.UTC(2025, 0, 1)
      // Past the rule of five, straight into the store: the cap must hold whatever is stored.
      await app.database.db.insertInto('trusted_devices').values(Array.from({ length: limit + 5 }, (_, index) => ({
        id: `01940000-0000-7000-8000-${String(index).padStart(12, '0')}`,
        user_id: ada.id,
        device_id: `device-${index}`,
        name: `Device ${index}`,
        created_at: new Date(start + index * 1000).toISOString()
      }))).execute()
      const answer = await exportOf(app, ada.token)
      t.equal(answer.statusCode, 200)
      t.same(schemaProblems(answer.json()), [])
      const { devices, truncated } = answer.json().data
      t.equal(devices.length, limit)
      t.equal(devices[0].device_id, `device-${limit + 4}`, 'the latest first')
      t.equal(devices.at(-1).device_id, 'device-5', 'the oldest left out')
      t.same(truncated, ['devices'])
      const [entry] = await app.database.db.selectFrom('audit_logs').select('details').where('event', '=', 'user.exported').execute()
      t.match(JSON.parse(entry?.details ?? '{}'), { truncated: ['devices'] })
    })

    t.test('only the caller: no token, a bad one or a parameter is refused, and nothing is recorded', async (t) => {
      const app = await build(t, { postgresUrl: backend.url })
      const ada = await createAccount(app)
      const anonymous = await app.inject({ method: 'GET', url: EXPORT_URL })
      t.equal(anonymous.statusCode, 401)
      t.equal(anonymous.json().error.code, 'MISSING_TOKEN')
      t.equal((await app.inject(withToken(`${ada.token}x`, { method: 'GET', url: EXPORT_URL }))).statusCode, 401)
      const targeted = await app.inject(withToken(ada.token, { method: 'GET', url: `${EXPORT_URL}?user_id=${ada.id}` }))
      t.equal(targeted.statusCode, 400, 'no parameter names another account')
      t.equal((await app.inject(withToken(ada.token, { method: 'GET', url: `/api/v1/users/${ada.id}/export` }))).statusCode, 404, 'nor a path')
      await app.auditTrail.flush()
      t.same(await app.database.db.selectFrom('audit_logs').select('id').where('event', '=', 'user.exported').execute(), [])
      // A deleted account's token exports nothing.
      const admin = await createAccount(app, { roles: ['admin'] })
      t.equal((await app.inject(withToken(admin.token, { method: 'DELETE', url: `/api/v1/users/${ada.id}` }))).statusCode, 204)
      t.equal((await exportOf(app, ada.token)).statusCode, 401)
    })
  })
}
