import type { LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { claimsOf, createAccount, uniqueEmail } from '../../helpers/accounts.js'
import { within } from '../../helpers/clock.js'
import { backends, suiteName } from '../../helpers/database.js'
import {
  APP_URL, appWithMail, type Method, type Organization, OrganizationHarness, refused, uniqueSlug
} from '../../helpers/organizations.js'
import { tokenIn } from '../../helpers/servers/mail-server.js'

/**
 * Organizations through the API (the design of issue 38): creating, listing, reading, changing
 * and deleting them, their members and invitations, selecting one for a session's tokens, what
 * the audit log records and what goes with a deleted user or organization.
 */

const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000'
const DAY_MS = 24 * 60 * 60 * 1000

/** The shared calls, and what these tests read of the store. */
class Harness extends OrganizationHarness {
  /** The organization's members and their roles, read from the store. */
  async roles (organizationId: string): Promise<Record<string, string>> {
    const rows = await this.app.database.db.selectFrom('organization_members').select(['user_id', 'role'])
      .where('organization_id', '=', organizationId).execute()
    return Object.fromEntries(rows.map((row) => [row.user_id, row.role]))
  }

  /** The organization's open invitations (neither accepted nor withdrawn), read from the store. */
  async invitations (organizationId: string) {
    return await this.app.database.db.selectFrom('organization_invitations').selectAll()
      .where('organization_id', '=', organizationId).where('closed_at', 'is', null).execute()
  }
}

const ids = (response: LightMyRequestResponse): string[] => response.json().data.map((item: { id: string }) => item.id)

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url)
    const h = new Harness(app, smtp)
    const globalAdmin = await createAccount(app, { roles: ['admin'] })
    const superAdmin = await createAccount(app, { roles: ['super_admin'] })

    t.test('create: 201, the caller becomes the owner, audited; a slug taken is 409', async (t) => {
      const owner = await createAccount(app)
      const slug = uniqueSlug('acme')
      const created = await h.call(owner, 'POST', '/organizations', { name: 'Acme Corporation', slug })
      t.equal(created.statusCode, 201)
      const organization = created.json().data
      t.match(organization, { id: String, name: 'Acme Corporation', slug, role: 'owner', created_at: String, updated_at: String })
      t.same(Object.keys(organization).sort(), ['created_at', 'id', 'name', 'role', 'slug', 'updated_at'])
      t.same(await h.roles(organization.id), { [owner.id]: 'owner' }, 'the creator is its one member, an owner')
      const read = await h.call(owner, 'GET', `/organizations/${organization.id}`)
      t.equal(read.statusCode, 200)
      t.same(read.json().data, organization)
      t.match(await h.audited('organization.created', organization.id), [{ actor_id: owner.id, outcome: 'success' }])

      const other = await createAccount(app)
      const taken = await h.call(other, 'POST', '/organizations', { name: 'Another', slug })
      refused(t, taken, 409, 'CONFLICT', 'Slug already taken')
      const stored = await app.database.db.selectFrom('organizations').select(['id', 'name']).where('slug', '=', slug).execute()
      t.same(stored, [{ id: organization.id, name: 'Acme Corporation' }], 'the first keeps it, nothing else was stored')
      t.same((await h.call(other, 'GET', '/organizations')).json().data, [], 'the refused caller belongs to nothing')
    })

    t.test('create: an account whose address was never verified is refused (403 EMAIL_NOT_VERIFIED), nothing stored', async (t) => {
      const unverified = await createAccount(app, { verified: false })
      const slug = uniqueSlug('unclaimed')
      const answer = await h.call(unverified, 'POST', '/organizations', { name: 'Squatted', slug })
      refused(t, answer, 403, 'EMAIL_NOT_VERIFIED')
      t.same(await app.database.db.selectFrom('organizations').select('id').where('slug', '=', slug).execute(), [])
      const memberships = await app.database.db.selectFrom('organization_members').select('organization_id')
        .where('user_id', '=', unverified.id).execute()
      t.same(memberships, [])
      const anonymous = await app.inject({ method: 'POST', url: '/api/v1/organizations', payload: { name: 'Nobody', slug } })
      refused(t, anonymous, 401, 'MISSING_TOKEN')
    })

    t.test('create and update: a body outside the schema is 400 VALIDATION_FAILED and stores nothing', async (t) => {
      const owner = await createAccount(app)
      const bodies: Array<Record<string, unknown>> = [
        {},
        { name: 'No slug' },
        { slug: uniqueSlug() },
        { name: '', slug: uniqueSlug() },
        { name: 'x'.repeat(101), slug: uniqueSlug() },
        { name: 42, slug: uniqueSlug() },
        { name: 'Upper', slug: 'Acme' },
        { name: 'Underscore', slug: 'acme_corp' },
        { name: 'Leading hyphen', slug: '-acme' },
        { name: 'Trailing hyphen', slug: 'acme-' },
        { name: 'Space', slug: 'ac me' },
        { name: 'Too long', slug: 'a'.repeat(64) },
        { name: 'Empty', slug: '' },
        { name: 'Extra', slug: uniqueSlug(), role: 'owner' },
        { name: 'Chosen id', slug: uniqueSlug(), id: UNKNOWN_ID }
      ]
      for (const body of bodies) {
        refused(t, await h.call(owner, 'POST', '/organizations', body), 400, 'VALIDATION_FAILED')
      }
      t.same((await h.call(owner, 'GET', '/organizations')).json().data, [], 'nothing was created')
      const longest = await h.call(owner, 'POST', '/organizations', { name: 'x'.repeat(100), slug: `a${'b'.repeat(61)}c` })
      t.equal(longest.statusCode, 201, 'a 100-character name and a 63-character slug are accepted')
      t.equal((await h.call(owner, 'POST', '/organizations', { name: 'One', slug: uniqueSlug('z').slice(0, 1) })).statusCode, 201,
        'a one-character slug is accepted')

      const organization = await h.organization(owner)
      for (const body of [{ name: '' }, { slug: 'Bad Slug' }, { name: 'Fine', role: 'owner' }, { id: UNKNOWN_ID }]) {
        refused(t, await h.call(owner, 'PATCH', `/organizations/${organization.id}`, body), 400, 'VALIDATION_FAILED')
      }
      t.same((await h.call(owner, 'GET', `/organizations/${organization.id}`)).json().data, organization, 'unchanged')
      refused(t, await h.call(owner, 'GET', '/organizations/not-a-uuid'), 400, 'VALIDATION_FAILED')
    })

    t.test('update: an empty body changes nothing, as a user\'s PATCH does, and records nothing', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Empty change')
      const answer = await h.call(owner, 'PATCH', `/organizations/${organization.id}`, {})
      t.equal(answer.statusCode, 200)
      t.same(answer.json().data, organization, 'answered as it is')
      t.same((await h.call(owner, 'GET', `/organizations/${organization.id}`)).json().data, organization, 'unchanged')
      t.same(await h.audited('organization.updated', organization.id), [], 'nothing audited')
    })

    t.test('list: a member sees only their organizations, with their role; a global admin sees them all', async (t) => {
      const alice = await createAccount(app)
      const bob = await createAccount(app)
      const first = await h.organization(alice, 'Alice One')
      const second = await h.organization(alice, 'Alice Two')
      const bobs = await h.organization(bob, 'Bob Only')
      await h.member(bob, bobs.id, 'member')
      const joined = await h.member(alice, first.id, 'admin')

      const ofAlice = await h.call(alice, 'GET', '/organizations?sort=name')
      t.equal(ofAlice.statusCode, 200)
      t.same(ids(ofAlice), [first.id, second.id])
      t.same(ofAlice.json().data.map((item: Organization) => item.role), ['owner', 'owner'])
      t.match(ofAlice.json().meta, { kind: 'offset', page: 1, total: 2 })
      t.same(ids(await h.call(bob, 'GET', '/organizations')), [bobs.id], 'not another owner\'s')
      const ofJoined = (await h.call(joined, 'GET', '/organizations')).json().data
      t.match(ofJoined, [{ id: first.id, role: 'admin' }], 'a member lists the organization with their role')
      t.equal(ofJoined.length, 1)

      const all = await h.call(globalAdmin, 'GET', '/organizations?limit=100')
      t.equal(all.statusCode, 200)
      const listed = all.json().data as Organization[]
      for (const organization of [first, second, bobs]) {
        t.match(listed.find((item) => item.id === organization.id), { name: organization.name, role: null },
          `the global admin sees ${organization.name}, with no role of theirs`)
      }
      t.equal(all.json().meta.total, (await app.database.db.selectFrom('organizations').select('id').execute()).length,
        'every organization')
    })

    t.test('list: pages, sort, search and fields', async (t) => {
      const owner = await createAccount(app)
      const names = ['Delta', 'Alpha', 'Charlie', 'Bravo', 'Echo']
      const made: Organization[] = []
      for (const name of names) made.push(await h.organization(owner, name, uniqueSlug(`list-${name.toLowerCase()}`)))
      const list = async (query: string) => await h.call(owner, 'GET', `/organizations?${query}`)

      const first = await list('limit=2&sort=name')
      t.same(first.json().meta, { kind: 'offset', page: 1, limit: 2, total: 5, totalExact: true, totalPages: 3 })
      const seen: string[] = []
      for (const page of [1, 2, 3]) seen.push(...ids(await list(`limit=2&page=${page}&sort=created_at`)))
      t.same(seen, made.map((organization) => organization.id), 'the pages cover every one once, in creation order')
      t.same((await list('limit=2&page=4')).json().data, [], 'past the end: empty')

      const byName = (await list('sort=name')).json().data.map((item: Organization) => item.name)
      t.same(byName, ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo'])
      const descending = (await list('sort=-created_at')).json().data as Organization[]
      t.same(descending.map((item) => item.id).sort(), made.map((organization) => organization.id).sort())
      t.ok(descending.every((item, index) => index === 0 || item.created_at <= (descending[index - 1]?.created_at ?? '')),
        'newest first')
      t.same(ids(await list('sort=-slug&limit=1')), [made[4]?.id], 'by slug, descending')
      refused(t, await list('sort=role'), 400, 'VALIDATION_FAILED')
      refused(t, await list('sort=password_hash'), 400, 'VALIDATION_FAILED')

      t.same(ids(await list('search=CHARL')), [made[2]?.id], 'search: a case-insensitive part of the name')
      t.same(ids(await list('search=list-bravo')), [made[3]?.id], 'or of the slug')
      t.equal((await list('search=%25')).json().meta.total, 0, 'LIKE wildcards are literal')
      t.equal((await list('search=nothing-like-it')).json().meta.total, 0)

      const fields = (await list('fields=name&limit=1')).json().data[0]
      t.same(Object.keys(fields).sort(), ['id', 'name'])
      const cursor = await list('cursor=&limit=3&sort=created_at')
      t.equal(cursor.statusCode, 200)
      t.match(cursor.json().meta, { kind: 'cursor', hasMore: true, nextCursor: String })
      const next = await list(`cursor=${encodeURIComponent(cursor.json().meta.nextCursor)}&limit=3&sort=created_at`)
      t.same([...ids(cursor), ...ids(next)], made.map((organization) => organization.id), 'the cursor walk covers them all')
    })

    t.test('get, update, delete: what each role may do; an outsider gets 404 on every route, never 403', async (t) => {
      const { owner, organization, admin, member } = await h.team('Permissions')
      const outsider = await createAccount(app)
      const path = `/organizations/${organization.id}`

      for (const [caller, role] of [[owner, 'owner'], [admin, 'admin'], [member, 'member']] as const) {
        const read = await h.call(caller, 'GET', path)
        t.equal(read.statusCode, 200, `${role} reads`)
        t.equal(read.json().data.role, role, 'with their role')
      }
      refused(t, await h.call(member, 'PATCH', path, { name: 'By a member' }), 403, 'FORBIDDEN',
        'Permission denied. Requires: org:update')
      refused(t, await h.call(member, 'DELETE', path), 403, 'FORBIDDEN', 'Permission denied. Requires: org:delete')
      refused(t, await h.call(admin, 'DELETE', path), 403, 'FORBIDDEN', 'Permission denied. Requires: org:delete')
      const byAdmin = await h.call(admin, 'PATCH', path, { name: 'Renamed by the admin' })
      t.equal(byAdmin.statusCode, 200, 'an admin updates')
      t.equal(byAdmin.json().data.name, 'Renamed by the admin')
      t.equal(byAdmin.json().data.role, 'admin')

      const notFound = { error: { code: 'NOT_FOUND', message: 'Organization not found' } }
      const routes: Array<[Method, string, Record<string, unknown>?]> = [
        ['GET', path], ['PATCH', path, { name: 'By an outsider' }], ['DELETE', path],
        ['GET', `${path}/members`], ['PATCH', `${path}/members/${member.id}`, { role: 'admin' }],
        ['DELETE', `${path}/members/${member.id}`],
        ['GET', `${path}/invitations`], ['POST', `${path}/invitations`, { email: outsider.email, role: 'member' }],
        ['DELETE', `${path}/invitations/${UNKNOWN_ID}`]
      ]
      for (const [method, url, payload] of routes) {
        const answer = await h.call(outsider, method, url, payload)
        t.equal(answer.statusCode, 404, `outsider: ${method} ${url}`)
        t.same(answer.json(), notFound)
        const unknown = await h.call(outsider, method, url.replace(organization.id, UNKNOWN_ID), payload)
        t.same([unknown.statusCode, unknown.body], [404, answer.body], 'answered exactly as for an organization that does not exist')
      }
      t.same(await h.roles(organization.id), { [owner.id]: 'owner', [admin.id]: 'admin', [member.id]: 'member' }, 'nothing changed')
      t.equal((await h.call(owner, 'GET', path)).json().data.name, 'Renamed by the admin')
      t.same(await h.invitations(organization.id), [])

      const deleted = await h.call(owner, 'DELETE', path)
      t.equal(deleted.statusCode, 204, 'the owner deletes')
      t.equal(deleted.body, '')
      refused(t, await h.call(owner, 'GET', path), 404, 'NOT_FOUND', 'Organization not found')
    })

    t.test('update: 200 with the new name and slug, audited; a slug another organization has is 409', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Before')
      const other = await h.organization(owner, 'Other')
      const slug = uniqueSlug('after')
      const updated = await h.call(owner, 'PATCH', `/organizations/${organization.id}`, { name: 'After', slug })
      t.equal(updated.statusCode, 200)
      t.match(updated.json().data, { id: organization.id, name: 'After', slug, role: 'owner', created_at: organization.created_at })
      t.ok(updated.json().data.updated_at >= organization.updated_at, 'updated_at moves on')
      t.equal((await h.call(owner, 'PATCH', `/organizations/${organization.id}`, { name: 'Only the name' })).json().data.slug, slug,
        'a field left out is kept')
      t.match(await h.audited('organization.updated', organization.id), [{ actor_id: owner.id, outcome: 'success' }, {}])

      refused(t, await h.call(owner, 'PATCH', `/organizations/${organization.id}`, { slug: other.slug }), 409, 'CONFLICT',
        'Slug already taken')
      t.equal((await h.call(owner, 'GET', `/organizations/${organization.id}`)).json().data.slug, slug, 'the slug is kept')
      t.equal((await h.call(owner, 'PATCH', `/organizations/${organization.id}`, { slug })).statusCode, 200,
        'its own slug again is no conflict')
    })

    t.test('a global admin (manage_users) reads any organization and its members, and changes nothing (403)', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Watched')
      const member = await h.member(owner, organization.id, 'member')
      const path = `/organizations/${organization.id}`

      const read = await h.call(globalAdmin, 'GET', path)
      t.equal(read.statusCode, 200)
      t.equal(read.json().data.role, null, 'no role of their own')
      const members = await h.call(globalAdmin, 'GET', `${path}/members`)
      t.equal(members.statusCode, 200)
      t.same(ids(members).sort(), [owner.id, member.id].sort())

      const attempts: Array<[Method, string, string, Record<string, unknown>?]> = [
        ['PATCH', path, 'org:update', { name: 'By a global admin' }],
        ['DELETE', path, 'org:delete'],
        ['PATCH', `${path}/members/${member.id}`, 'members:update', { role: 'owner' }],
        ['DELETE', `${path}/members/${member.id}`, 'members:remove'],
        ['GET', `${path}/invitations`, 'members:invite'],
        ['POST', `${path}/invitations`, 'members:invite', { email: globalAdmin.email, role: 'owner' }]
      ]
      for (const [method, url, permission, payload] of attempts) {
        refused(t, await h.call(globalAdmin, method, url, payload), 403, 'FORBIDDEN', `Permission denied. Requires: ${permission}`)
      }
      t.same(await h.roles(organization.id), { [owner.id]: 'owner', [member.id]: 'member' }, 'nothing changed')
      t.equal((await h.call(owner, 'GET', path)).json().data.name, 'Watched')
      t.same(await h.invitations(organization.id), [])
    })

    t.test('a super_admin acts as an owner of any organization, and each such request is audited', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Overseen')
      const member = await h.member(owner, organization.id, 'member')
      const path = `/organizations/${organization.id}`
      const accessed = async () => await h.audited('organization.accessed_as_super_admin', organization.id)
      t.same(await accessed(), [], 'nothing yet')

      const read = await h.call(superAdmin, 'GET', path)
      t.equal(read.statusCode, 200)
      t.equal(read.json().data.id, organization.id)
      const afterRead = await accessed()
      t.equal(afterRead.length, 1, 'the read is audited')
      t.match(afterRead[0], { actor_id: superAdmin.id, outcome: 'success' })

      t.equal((await h.call(superAdmin, 'PATCH', path, { name: 'Renamed by the operator' })).statusCode, 200)
      const promoted = await h.call(superAdmin, 'PATCH', `${path}/members/${member.id}`, { role: 'owner' })
      t.equal(promoted.statusCode, 200, 'grants even owner')
      t.equal(promoted.json().data.role, 'owner')
      t.equal((await h.call(superAdmin, 'GET', `${path}/invitations`)).statusCode, 200)
      t.equal(await accessed().then((rows) => rows.length), 4, 'each request is audited')
      t.match(await h.audited('organization.updated', organization.id), [{ actor_id: superAdmin.id }])
      t.match(await h.audited('membership.role_changed', organization.id),
        [{ actor_id: superAdmin.id, target_id: member.id, details: { role: 'owner', previous_role: 'member' } }])

      const deleted = await h.call(superAdmin, 'DELETE', path)
      t.equal(deleted.statusCode, 204)
      t.match(await h.audited('organization.deleted', organization.id), [{ actor_id: superAdmin.id }])
      t.equal(await accessed().then((rows) => rows.length), 5)
      t.same(await app.database.db.selectFrom('organizations').select('id').where('id', '=', organization.id).execute(), [])

      const own = await h.organization(superAdmin, 'Operator\'s own')
      const before = (await h.audited('organization.accessed_as_super_admin', own.id)).length
      t.equal((await h.call(superAdmin, 'GET', `/organizations/${own.id}`)).statusCode, 200)
      t.equal((await h.audited('organization.accessed_as_super_admin', own.id)).length, before,
        'an owner in their own right is not acting as a super_admin')
    })

    t.test('members: listed in joining order with address, name and role; search, sort and pages', async (t) => {
      const owner = await createAccount(app, { name: 'Olivia Owner' })
      const organization = await h.organization(owner, 'Members')
      const admin = await h.member(owner, organization.id, 'admin', 'Adam Admin')
      const member = await h.member(owner, organization.id, 'member', 'Mia Member')
      const path = `/organizations/${organization.id}/members`

      const listed = await h.call(member, 'GET', path)
      t.equal(listed.statusCode, 200, 'a member reads the members')
      const data = listed.json().data
      t.same(data.map((item: { id: string }) => item.id), [owner.id, admin.id, member.id], 'joining order')
      t.match(data[1], { id: admin.id, email: admin.email, name: 'Adam Admin', role: 'admin', created_at: String })
      t.same(Object.keys(data[1]).sort(), ['created_at', 'email', 'id', 'name', 'role'])
      t.notMatch(listed.body, /password|hash|token/i)
      t.match(listed.json().meta, { kind: 'offset', total: 3 })

      t.same(ids(await h.call(owner, 'GET', `${path}?sort=-created_at`)), [member.id, admin.id, owner.id])
      t.same(ids(await h.call(owner, 'GET', `${path}?search=mia`)), [member.id], 'search: the name')
      t.same(ids(await h.call(owner, 'GET', `${path}?search=${encodeURIComponent(admin.email.toUpperCase())}`)), [admin.id],
        'or the address, any case')
      t.same(ids(await h.call(owner, 'GET', `${path}?limit=2&page=2`)), [member.id])
      t.same(ids(await h.call(owner, 'GET', `${path}?fields=role&limit=1`)), [owner.id])
      refused(t, await h.call(owner, 'GET', `${path}?sort=password_hash`), 400, 'VALIDATION_FAILED')
    })

    t.test('members update: the rank rules, audited and noticed; a user who is no member is 404', async (t) => {
      const { owner, organization, admin, member } = await h.team('Ranks')
      const path = `/organizations/${organization.id}/members`

      const promoted = await h.call(owner, 'PATCH', `${path}/${member.id}`, { role: 'admin' })
      t.equal(promoted.statusCode, 200)
      t.match(promoted.json().data, { id: member.id, email: member.email, role: 'admin' })
      t.match(await h.audited('membership.role_changed', organization.id),
        [{ actor_id: owner.id, target_id: member.id, outcome: 'success', details: { role: 'admin', previous_role: 'member' } }])
      const notice = await within('the role notice', 10_000,
        smtp.next((mail) => mail.to.includes(member.email) && !mail.subject.startsWith('Verify')))
      t.notMatch(notice.text, /token=/, 'a notice, no token')

      const byAdmin = await h.call(admin, 'PATCH', `${path}/${member.id}`, { role: 'member' })
      t.equal(byAdmin.statusCode, 200, 'an admin demotes another admin')
      t.equal(byAdmin.json().data.role, 'member')
      t.equal((await h.call(admin, 'PATCH', `${path}/${member.id}`, { role: 'admin' })).statusCode, 200,
        'and promotes a member up to their own rank')

      refused(t, await h.call(admin, 'PATCH', `${path}/${member.id}`, { role: 'owner' }), 403, 'FORBIDDEN')
      refused(t, await h.call(admin, 'PATCH', `${path}/${owner.id}`, { role: 'member' }), 403, 'FORBIDDEN')
      refused(t, await h.call(admin, 'PATCH', `${path}/${admin.id}`, { role: 'owner' }), 403, 'FORBIDDEN')
      t.same(await h.roles(organization.id), { [owner.id]: 'owner', [admin.id]: 'admin', [member.id]: 'admin' }, 'as they were')

      const plain = await h.member(owner, organization.id, 'member')
      refused(t, await h.call(plain, 'PATCH', `${path}/${plain.id}`, { role: 'admin' }), 403, 'FORBIDDEN',
        'Permission denied. Requires: members:update')

      const stranger = await createAccount(app)
      refused(t, await h.call(owner, 'PATCH', `${path}/${stranger.id}`, { role: 'admin' }), 404, 'NOT_FOUND')
      refused(t, await h.call(owner, 'PATCH', `${path}/${UNKNOWN_ID}`, { role: 'admin' }), 404, 'NOT_FOUND')
      t.same(await app.database.db.selectFrom('organization_members').select('organization_id')
        .where('user_id', '=', stranger.id).execute(), [], 'no membership made')
      for (const body of [{ role: 'super_admin' }, { role: 'OWNER' }, {}, { role: 'admin', organization_id: UNKNOWN_ID }]) {
        refused(t, await h.call(owner, 'PATCH', `${path}/${plain.id}`, body), 400, 'VALIDATION_FAILED')
      }

      refused(t, await h.call(owner, 'PATCH', `${path}/${owner.id}`, { role: 'admin' }), 409, 'CONFLICT',
        'An organization keeps at least one owner')
      t.equal((await h.call(owner, 'PATCH', `${path}/${admin.id}`, { role: 'owner' })).statusCode, 200, 'an owner makes another')
      const stepDown = await h.call(owner, 'PATCH', `${path}/${owner.id}`, { role: 'admin' })
      t.equal(stepDown.statusCode, 200, 'with another owner, an owner may step down')
      t.same(await h.roles(organization.id), {
        [owner.id]: 'admin', [admin.id]: 'owner', [member.id]: 'admin', [plain.id]: 'member'
      })
    })

    t.test('members delete: removal by rank, audited and noticed; any member leaves; the last owner stays (409)', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Leaving')
      const admin = await h.member(owner, organization.id, 'admin')
      const deputy = await h.member(owner, organization.id, 'admin')
      const member = await h.member(owner, organization.id, 'member')
      const leaver = await h.member(owner, organization.id, 'member')
      const path = `/organizations/${organization.id}/members`

      refused(t, await h.call(member, 'DELETE', `${path}/${leaver.id}`), 403, 'FORBIDDEN', 'Permission denied. Requires: members:remove')
      refused(t, await h.call(admin, 'DELETE', `${path}/${owner.id}`), 403, 'FORBIDDEN')
      t.equal(Object.keys(await h.roles(organization.id)).length, 5, 'nobody removed')

      const removed = await h.call(admin, 'DELETE', `${path}/${member.id}`)
      t.equal(removed.statusCode, 204, 'an admin removes a member')
      t.match(await h.audited('membership.removed', organization.id), [{ actor_id: admin.id, target_id: member.id, outcome: 'success' }])
      await within('the removal notice', 10_000, smtp.next((mail) => mail.to.includes(member.email) && !mail.subject.startsWith('Verify')))
      refused(t, await h.call(member, 'GET', `/organizations/${organization.id}`), 404, 'NOT_FOUND', 'Organization not found')
      t.equal((await h.call(admin, 'DELETE', `${path}/${deputy.id}`)).statusCode, 204, 'and another admin')

      const left = await h.call(leaver, 'DELETE', `${path}/${leaver.id}`)
      t.equal(left.statusCode, 204, 'a member leaves without members:remove')
      t.match(await h.audited('membership.left', organization.id), [{ actor_id: leaver.id, target_id: leaver.id }])
      t.notOk((await h.audited('membership.removed', organization.id)).some((row) => row.target_id === leaver.id),
        'leaving is not a removal')
      t.same(ids(await h.call(leaver, 'GET', '/organizations')), [], 'they belong to it no more')

      refused(t, await h.call(owner, 'DELETE', `${path}/${owner.id}`), 409, 'CONFLICT', 'An organization keeps at least one owner')
      refused(t, await h.call(owner, 'DELETE', `${path}/${UNKNOWN_ID}`), 404, 'NOT_FOUND')
      refused(t, await h.call(owner, 'DELETE', `${path}/${member.id}`), 404, 'NOT_FOUND', 'Member not found')
      t.same(await h.roles(organization.id), { [owner.id]: 'owner', [admin.id]: 'admin' })

      const second = await h.member(owner, organization.id, 'owner')
      t.equal((await h.call(owner, 'DELETE', `${path}/${owner.id}`)).statusCode, 204, 'with another owner, an owner leaves')
      refused(t, await h.call(second, 'DELETE', `${path}/${second.id}`), 409, 'CONFLICT', 'An organization keeps at least one owner')
      t.same(await h.roles(organization.id), { [second.id]: 'owner', [admin.id]: 'admin' })
    })

    t.test('invitations create: 201 without the token, the token by mail, audited; 409 for a member or a pending one', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Inviting')
      const path = `/organizations/${organization.id}/invitations`
      const email = uniqueEmail('invitee')
      const before = Date.now()
      const created = await h.call(owner, 'POST', path, { email, role: 'admin' })
      t.equal(created.statusCode, 201)
      const invitation = created.json().data
      t.same(Object.keys(invitation).sort(), ['created_at', 'email', 'expires_at', 'id', 'invited_by', 'role'], 'no token in it')
      t.match(invitation, { id: String, email, role: 'admin', invited_by: owner.id })
      const lifetime = Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)
      t.ok(Math.abs(lifetime - 7 * DAY_MS) < 60_000, `good for 7 days (${lifetime} ms)`)
      t.ok(Date.parse(invitation.created_at) >= before - 1000)

      const mail = await h.invitationMail(email)
      t.match(mail.text, `${APP_URL}/accept-invitation?token=`, 'the link points at the application')
      const token = tokenIn(mail)
      t.match(mail.text, `Token: ${token}`)
      t.notMatch(created.body, token)
      const [stored] = await h.invitations(organization.id)
      t.not(stored?.token_hash, token, 'the token is not stored as it is')
      t.match(await h.audited('invitation.created', organization.id), [{ actor_id: owner.id, outcome: 'success', details: { role: 'admin' } }])
      const trail = await app.database.db.selectFrom('audit_logs').select('details').execute()
      t.notOk(trail.some((row) => row.details.includes(token) || row.details.includes(stored?.token_hash ?? '-')),
        'the audit log holds neither the token nor its hash')

      refused(t, await h.call(owner, 'POST', path, { email, role: 'member' }), 409, 'CONFLICT')
      // The address in another case is the same address.
      refused(t, await h.call(owner, 'POST', path, { email: email.toUpperCase(), role: 'member' }), 409, 'CONFLICT',
        'This address has a pending invitation; withdraw it to invite again')
      refused(t, await h.call(owner, 'POST', path, { email: owner.email, role: 'member' }), 409, 'CONFLICT',
        'This address belongs to a member already')
      t.equal((await h.invitations(organization.id)).length, 1, 'one invitation stored')

      await app.database.db.updateTable('organization_invitations').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('organization_id', '=', organization.id).execute()
      const renewed = await h.call(owner, 'POST', path, { email, role: 'member' })
      t.equal(renewed.statusCode, 201, 'an expired invitation is no longer pending: the address may be invited again')
      await h.invitationMail(email)

      for (const body of [{ email: 'not-an-address', role: 'member' }, { email, role: 'super_admin' }, { email },
        { role: 'member' }, { email, role: 'member', token: 'chosen' }]) {
        refused(t, await h.call(owner, 'POST', path, body), 400, 'VALIDATION_FAILED')
      }
    })

    t.test('invitations create: nobody invites above their own role (403); a member invites nobody', async (t) => {
      const { owner, organization, admin, member } = await h.team('Invite ranks')
      const path = `/organizations/${organization.id}/invitations`
      const email = uniqueEmail('ranked')

      const audited = (await h.audited('invitation.created', organization.id)).length
      refused(t, await h.call(admin, 'POST', path, { email, role: 'owner' }), 403, 'FORBIDDEN')
      refused(t, await h.call(member, 'POST', path, { email, role: 'member' }), 403, 'FORBIDDEN', 'Permission denied. Requires: members:invite')
      refused(t, await h.call(member, 'GET', path), 403, 'FORBIDDEN', 'Permission denied. Requires: members:invite')
      t.same(await h.invitations(organization.id), [], 'nothing stored')
      t.equal((await h.audited('invitation.created', organization.id)).length, audited, 'nothing audited')

      t.equal((await h.call(admin, 'POST', path, { email, role: 'admin' })).statusCode, 201, 'an admin invites an admin')
      await h.invitationMail(email)
      const ownerInvite = `owner-${email}`
      t.equal((await h.call(owner, 'POST', path, { email: ownerInvite, role: 'owner' })).statusCode, 201, 'an owner invites an owner')
      await h.invitationMail(ownerInvite)
    })

    t.test('invitations list: the pending ones (expired included), sorted and searched; delete revokes, audited', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Pending')
      const admin = await h.member(owner, organization.id, 'admin')
      const path = `/organizations/${organization.id}/invitations`
      const made = []
      for (const prefix of ['carol', 'alice', 'bob']) {
        made.push((await h.invite(owner, organization.id, uniqueEmail(prefix), 'member')).invitation)
      }
      const accepted = await createAccount(app)
      const { token: acceptedToken } = await h.invite(owner, organization.id, accepted.email, 'member')
      t.equal((await h.call(accepted, 'POST', '/invitations/accept', { token: acceptedToken })).statusCode, 200)

      const listed = await h.call(admin, 'GET', path)
      t.equal(listed.statusCode, 200, 'an admin lists them')
      t.same(ids(listed), made.map((invitation) => invitation.id), 'oldest first; the accepted one is gone')
      t.match(listed.json().meta, { kind: 'offset', total: 3 })
      t.notMatch(listed.body, /token/i)
      t.same(listed.json().data[0], made[0], 'as created')

      const emails = async (query: string) =>
        (await h.call(owner, 'GET', `${path}?${query}`)).json().data.map((item: { email: string }) => item.email.split('-')[0])
      t.same(await emails('sort=email'), ['alice', 'bob', 'carol'])
      t.same(await emails('sort=-created_at'), ['bob', 'alice', 'carol'])
      t.same(await emails('search=ALICE'), ['alice'])
      t.same(await emails('limit=1&page=2&sort=email'), ['bob'])

      await app.database.db.updateTable('organization_invitations').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', made[0]?.id).execute()
      t.same(await emails('sort=expires_at'), ['carol', 'alice', 'bob'], 'an expired one is listed until revoked')

      const revoked = await h.call(admin, 'DELETE', `${path}/${made[1]?.id}`)
      t.equal(revoked.statusCode, 204)
      t.same(await emails('sort=email'), ['bob', 'carol'])
      t.match(await h.audited('invitation.revoked', organization.id), [{ actor_id: admin.id, outcome: 'success' }])
      refused(t, await h.call(admin, 'DELETE', `${path}/${made[1]?.id}`), 404, 'NOT_FOUND', 'Invitation not found')
      refused(t, await h.call(admin, 'DELETE', `${path}/${UNKNOWN_ID}`), 404, 'NOT_FOUND')
      refused(t, await h.call(owner, 'GET', `${path}?sort=token_hash`), 400, 'VALIDATION_FAILED')
    })

    t.test('invitations: at most 50 per organization per hour, then 429 RATE_LIMITED', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Busy')
      // Another owner's: the same one's would meet the inviter's own limit (50 an hour, across organizations).
      const otherOwner = await createAccount(app)
      const other = await h.organization(otherOwner, 'Quiet')
      for (let n = 0; n < 50; n++) {
        const answer = await h.call(owner, 'POST', `/organizations/${organization.id}/invitations`, { email: uniqueEmail(`bulk-${n}`), role: 'member' })
        if (answer.statusCode !== 201) t.fail(`invitation ${n}: ${answer.statusCode} ${answer.body}`)
      }
      const fiftyFirst = uniqueEmail('bulk-50')
      const over = await h.call(owner, 'POST', `/organizations/${organization.id}/invitations`, { email: fiftyFirst, role: 'member' })
      refused(t, over, 429, 'RATE_LIMITED')
      t.equal((await h.invitations(organization.id)).length, 50, 'the 51st was not stored')
      const elsewhere = await h.call(otherOwner, 'POST', `/organizations/${other.id}/invitations`, { email: fiftyFirst, role: 'member' })
      t.equal(elsewhere.statusCode, 201, 'the limit is per organization')
      refused(t, await h.call(owner, 'POST', `/organizations/${other.id}/invitations`, { email: uniqueEmail('bulk-other'), role: 'member' }), 404, 'NOT_FOUND')
    })

    t.test('accept: 200 with the organization and the invited role; the membership is audited and the invitation spent', async (t) => {
      const { owner, organization, invitee, invitation, token } = await h.withInvitee('Welcome', 'admin')
      const accepted = await h.call(invitee, 'POST', '/invitations/accept', { token })
      t.equal(accepted.statusCode, 200)
      t.match(accepted.json().data, { id: organization.id, name: 'Welcome', slug: organization.slug, role: 'admin' })
      t.same(await h.roles(organization.id), { [owner.id]: 'owner', [invitee.id]: 'admin' })
      t.same(await h.invitations(organization.id), [], 'the invitation is deleted')
      t.match(await h.audited('membership.added', organization.id),
        [{ actor_id: invitee.id, target_id: invitee.id, outcome: 'success', details: { role: 'admin' } }])
      t.match((await h.call(invitee, 'GET', `/organizations/${organization.id}`)).json().data, { role: 'admin' })
      refused(t, await h.call(owner, 'DELETE', `/organizations/${organization.id}/invitations/${invitation.id}`), 404, 'NOT_FOUND')
      refused(t, await app.inject({ method: 'POST', url: '/api/v1/invitations/accept', payload: { token } }), 401, 'MISSING_TOKEN')
    })

    t.test('accept: an unknown, used, revoked or expired token is 400 INVALID_ONE_TIME_TOKEN', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Tokens')
      const invitee = await createAccount(app)
      const invalid = { error: { code: 'INVALID_ONE_TIME_TOKEN', message: 'Invalid, used or expired token' } }
      const accept = async (token: string) => await h.call(invitee, 'POST', '/invitations/accept', { token })

      for (const token of ['x', 'A'.repeat(43), 'not a token at all \u202E']) {
        const answer = await accept(token)
        t.equal(answer.statusCode, 400, `made up: ${JSON.stringify(token)}`)
        t.same(answer.json(), invalid)
      }
      refused(t, await h.call(invitee, 'POST', '/invitations/accept', { token: '' }), 400, 'VALIDATION_FAILED')

      const expired = await h.invite(owner, organization.id, invitee.email, 'member')
      await app.database.db.updateTable('organization_invitations').set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', expired.invitation.id).execute()
      t.same((await accept(expired.token)).json(), invalid, 'expired')
      t.same(await h.roles(organization.id), { [owner.id]: 'owner' }, 'not a member')
      t.equal((await accept(`${expired.token}x`)).statusCode, 400, 'a longer token is another token')

      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/invitations/${expired.invitation.id}`)).statusCode, 204)
      const revoked = await h.invite(owner, organization.id, invitee.email, 'member')
      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/invitations/${revoked.invitation.id}`)).statusCode, 204)
      t.same((await accept(revoked.token)).json(), invalid, 'revoked')

      const good = await h.invite(owner, organization.id, invitee.email, 'member')
      t.equal((await accept(good.token)).statusCode, 200)
      const again = await accept(good.token)
      t.equal(again.statusCode, 400, 'used')
      t.same(again.json(), invalid)
      t.equal((await h.audited('membership.added', organization.id)).length, 1, 'one membership')
    })

    t.test('accept: another address 403 INVITATION_EMAIL_MISMATCH, the invitation stays usable; unverified 403; a member 409', async (t) => {
      const { owner, organization, invitee, token } = await h.withInvitee('Addressed', 'member')
      const other = await createAccount(app)

      refused(t, await h.call(other, 'POST', '/invitations/accept', { token }), 403, 'INVITATION_EMAIL_MISMATCH')
      t.same(await h.roles(organization.id), { [owner.id]: 'owner' })
      t.equal((await h.invitations(organization.id)).length, 1, 'the invitation stays')
      t.equal((await h.call(invitee, 'POST', '/invitations/accept', { token })).statusCode, 200, 'and the invitee accepts it')

      const unverified = await createAccount(app, { verified: false })
      const pending = await h.invite(owner, organization.id, unverified.email, 'member')
      refused(t, await h.call(unverified, 'POST', '/invitations/accept', { token: pending.token }), 403, 'EMAIL_NOT_VERIFIED')
      t.notOk(unverified.id in await h.roles(organization.id), 'not a member')
      t.equal((await h.invitations(organization.id)).length, 1, 'the invitation stays')

      const joiner = await createAccount(app)
      const { token: late } = await h.invite(owner, organization.id, joiner.email, 'admin')
      await app.database.db.insertInto('organization_members')
        .values({ organization_id: organization.id, user_id: joiner.id, role: 'member', created_at: new Date().toISOString() }).execute()
      refused(t, await h.call(joiner, 'POST', '/invitations/accept', { token: late }), 409, 'CONFLICT')
      t.equal((await h.roles(organization.id))[joiner.id], 'member', 'the role is not changed by an invitation')
    })

    t.test('/auth/organization: the session\'s tokens carry org_id and org_roles; null clears; not a member 404', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Selected')
      const session = await h.signIn(owner)

      const selected = await h.select(session.refresh_token, organization.id)
      t.equal(selected.statusCode, 200)
      const pair = selected.json().data
      t.match(pair, { access_token: String, refresh_token: String, token_type: 'Bearer', expires_in: Number, refresh_expires_in: Number })
      t.same(Object.keys(pair).sort(), ['access_token', 'expires_in', 'refresh_expires_in', 'refresh_token', 'token_type'],
        'a TokenPair, as /auth/refresh answers')
      t.match(claimsOf(pair.access_token), { sub: owner.id, org_id: organization.id, org_roles: ['owner'] })
      t.match(await h.audited('auth.organization_selected', organization.id), [{ actor_id: owner.id, outcome: 'success' }])
      t.equal((await h.call(pair.access_token, 'GET', `/organizations/${organization.id}`)).statusCode, 200)

      const refreshed = await h.refresh(pair.refresh_token)
      t.equal(refreshed.statusCode, 200)
      t.match(claimsOf(refreshed.json().data.access_token), { org_id: organization.id, org_roles: ['owner'] }, 'a refresh keeps it')

      const cleared = await h.select(refreshed.json().data.refresh_token, null)
      t.equal(cleared.statusCode, 200)
      const none = claimsOf(cleared.json().data.access_token)
      t.notOk('org_id' in none || 'org_roles' in none, 'null clears it')
      const after = await h.refresh(cleared.json().data.refresh_token)
      const afterClaims = claimsOf(after.json().data.access_token)
      t.notOk('org_id' in afterClaims || 'org_roles' in afterClaims, 'and the session forgets it')

      const outsider = await createAccount(app)
      const outsiderSession = await h.signIn(outsider)
      for (const id of [organization.id, UNKNOWN_ID]) {
        const answer = await h.select(outsiderSession.refresh_token, id)
        t.equal(answer.statusCode, 404)
        t.same(answer.json(), { error: { code: 'NOT_FOUND', message: 'Organization not found' } })
      }
      t.equal((await h.refresh(outsiderSession.refresh_token)).statusCode, 200, 'a refused selection spends no refresh token')
      const invalid = await h.select('not-a-refresh-token', organization.id)
      t.equal(invalid.statusCode, 401)
      t.equal(invalid.json().error.code, 'INVALID_TOKEN')
      refused(t, await h.select(after.json().data.refresh_token, 'not-a-uuid'), 400, 'VALIDATION_FAILED')
    })

    t.test('cascades: deleting a user deletes their memberships; their invitations keep, invited_by null', async (t) => {
      const { owner, organization, admin, member } = await h.team('Cascade user')
      const { invitation } = await h.invite(admin, organization.id, uniqueEmail('invited'), 'member')
      t.equal(invitation.invited_by, admin.id)

      for (const account of [member, admin]) {
        t.equal((await h.call(globalAdmin, 'DELETE', `/users/${account.id}`, {})).statusCode, 204)
      }
      t.same(await h.roles(organization.id), { [owner.id]: 'owner' }, 'their memberships went with them')
      t.same(ids(await h.call(owner, 'GET', `/organizations/${organization.id}/members`)), [owner.id])
      const listed = (await h.call(owner, 'GET', `/organizations/${organization.id}/invitations`)).json().data
      t.match(listed, [{ id: invitation.id, invited_by: null }], 'the invitation stays, its inviter forgotten')
      t.equal((await h.call(owner, 'GET', `/organizations/${organization.id}`)).statusCode, 200, 'the organization stays')
    })

    t.test('cascades: deleting an organization deletes its members and invitations, never users; audited', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Cascade organization')
      const kept = await h.organization(owner, 'Kept')
      const member = await h.member(owner, organization.id, 'member')
      await h.member(owner, kept.id, 'member')
      const { token } = await h.invite(owner, organization.id, uniqueEmail('pending'), 'member')
      await h.invite(owner, kept.id, member.email, 'admin')

      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}`)).statusCode, 204)
      const db = app.database.db
      t.same(await db.selectFrom('organizations').select('id').where('id', '=', organization.id).execute(), [])
      t.same(await h.roles(organization.id), {}, 'its members went with it')
      t.same(await h.invitations(organization.id), [], 'and its invitations')
      t.equal(Object.keys(await h.roles(kept.id)).length, 2, 'another organization keeps its members')
      t.equal((await h.invitations(kept.id)).length, 1, 'and its invitations')
      for (const account of [owner, member]) {
        t.equal((await h.call(globalAdmin, 'GET', `/users/${account.id}`)).statusCode, 200, 'the users stay')
      }
      t.equal((await h.call(member, 'GET', '/auth/me')).statusCode, 200)
      t.match(await h.audited('organization.deleted', organization.id), [{ actor_id: owner.id, outcome: 'success' }])
      const invitee = await createAccount(app)
      refused(t, await h.call(invitee, 'POST', '/invitations/accept', { token }), 400, 'INVALID_ONE_TIME_TOKEN')
    })

    t.test('the audit log lists the organization events to an admin, without tokens', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Audited')
      const member = await h.member(owner, organization.id, 'member')
      t.equal((await h.call(owner, 'PATCH', `/organizations/${organization.id}/members/${member.id}`, { role: 'admin' })).statusCode, 200)
      const session = await h.signIn(member)
      t.equal((await h.select(session.refresh_token, organization.id)).statusCode, 200)

      const events = [['organization.created', owner], ['invitation.created', owner], ['membership.added', member],
        ['membership.role_changed', owner], ['auth.organization_selected', member]] as const
      for (const [event, actor] of events) {
        const listed = await h.call(globalAdmin, 'GET', `/audit-logs?event=${event}&actor_id=${actor.id}&limit=100`)
        t.equal(listed.statusCode, 200, event)
        const entries = (listed.json().data as Array<{ details: Record<string, unknown>, actor_id: string }>)
          .filter((entry) => entry.details.organization_id === organization.id)
        t.equal(entries.length, 1, `${event}: one entry, with the organization's id`)
        t.notMatch(JSON.stringify(entries), /token|secret|key/i, 'no word of tokens, secrets or keys')
      }
      const changed = (await h.audited('membership.role_changed', organization.id))[0]
      t.match(changed, { actor_id: owner.id, target_id: member.id, details: { role: 'admin', previous_role: 'member' } })
    })
  })
}
