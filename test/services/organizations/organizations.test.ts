import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { Errors } from '../../../src/errors.js'
import { TokenService } from '../../../src/security/tokens.js'
import { uuidv7 } from '../../../src/store/ids.js'
import { TEST_SECRET } from '../../helpers/app.js'
import { backends, refuseWrites } from '../../helpers/database.js'
import {
  join, organizationOf, type ServiceAccount, servicesWithOrganization, uniqueSlug
} from '../../helpers/organizations.js'
import { actingAs, buildServices, contextFrom, owner, registered, type ServiceFixture } from '../../helpers/services.js'

const LAST_OWNER = { code: 'CONFLICT', statusCode: 409, message: 'An organization keeps at least one owner' }
const FORBIDDEN = { code: 'FORBIDDEN', statusCode: 403 }

/** The services, alice, an organization she created (named `name`), and bob, a member of it. */
async function withMember (t: Test, url: string | null, name?: string) {
  const setting = await servicesWithOrganization(t, url, { name })
  const bob = await owner(setting.fixture)
  await join(setting.fixture, setting.organization.id, bob.id, 'member')
  return { ...setting, bob }
}

async function roleOf ({ database }: ServiceFixture, organizationId: string, userId: string) {
  const row = await database.db.selectFrom('organization_members').select('role')
    .where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst()
  return row?.role
}

async function ownersOf ({ database }: ServiceFixture, organizationId: string) {
  return (await database.db.selectFrom('organization_members').select('user_id')
    .where('organization_id', '=', organizationId).where('role', '=', 'owner').execute()).map((row) => row.user_id)
}

const NOTICE_SUBJECTS = ['Your role in an organization was changed', 'You were removed from an organization']

/**
 * The organization notices to `to`, delivered or still in the outbox (the outbox delivers
 * them once their change is committed; it is drained first).
 */
async function noticesTo ({ database, delivered, sent }: ServiceFixture, to: string) {
  await delivered()
  const waiting = await database.db.selectFrom('outbox').select(['subject', 'text_body as text'])
    .where('recipient', '=', to).execute()
  return [...sent.filter((mail) => mail.to === to), ...waiting]
    .filter((message) => NOTICE_SUBJECTS.includes(message.subject))
    .map(({ subject, text }) => ({ subject, text }))
}

/** The audit rows of every organization and membership event, for "nothing was recorded". */
async function membershipEntries (fixture: ServiceFixture) {
  const events = ['membership.role_changed', 'membership.removed', 'membership.left', 'membership.added']
  return (await Promise.all(events.map(async (event) => await fixture.audited(event)))).flat()
}

/** A session of `account` opened for the test, and its pair. */
async function sessionOf (fixture: ServiceFixture, account: ServiceAccount) {
  const principal = await fixture.repositories.users.findPrincipal(account.id)
  if (principal === undefined) throw new Error('no such account')
  return await fixture.services.sessions.start(principal, undefined, ['pwd'], fixture.audit.recorded(contextFrom('192.0.2.40'), []))
}

/** `found` matches `expected` item by item, and holds nothing more. */
function exactly (t: Test, found: unknown[], expected: unknown[], message = 'as expected') {
  t.equal(found.length, expected.length, `${message}: ${expected.length} item(s)`)
  t.match(found, expected, message)
}

const claimsOf = (accessToken: string) => new TokenService({ secret: TEST_SECRET }).verify(accessToken, 'access')

for (const backend of backends()) {
  t.test(`organizations (${backend.name})`, async (t) => {
    t.test('creating: the caller becomes the owner, and the creation is recorded', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const alice = await owner(fixture)
      const slug = uniqueSlug()
      const organization = await fixture.services.organizations.create(actingAs(alice), { name: 'Acme Corporation', slug })
      t.match(organization, { name: 'Acme Corporation', slug, role: 'owner' })
      t.equal(await roleOf(fixture, organization.id, alice.id), 'owner', 'the creator is a member, as owner')
      t.same(await ownersOf(fixture, organization.id), [alice.id], 'and its only member')
      const entries = await fixture.audited('organization.created')
      exactly(t, entries, [{ actor_id: alice.id, outcome: 'success', details: { organization_id: organization.id } }])
      t.notMatch(JSON.stringify(entries), /token|secret|key/i, 'no secret-sounding words in the entry')
      exactly(t, (await fixture.services.organizations.list(actingAs(alice), {})).data, [{ id: organization.id, role: 'owner' }])
    })

    t.test('an unclaimed account (address never proved) creates no organization: 403 EMAIL_NOT_VERIFIED', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const unclaimed = await registered(fixture)
      await t.rejects(fixture.services.organizations.create(actingAs(unclaimed), { name: 'Squat', slug: uniqueSlug() }),
        Errors.EMAIL_NOT_VERIFIED)
      t.same(await fixture.database.db.selectFrom('organizations').select('id').execute(), [], 'no organization')
      t.same(await fixture.database.db.selectFrom('organization_members').select('user_id').execute(), [], 'no membership')
      t.same(await fixture.audited('organization.created'), [], 'nothing recorded')
    })

    t.test('a slug is unique: 409 "Slug already taken" at creation and on a change, nothing recorded', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const alice = await owner(fixture)
      const bob = await owner(fixture)
      const slug = uniqueSlug()
      await services.organizations.create(actingAs(alice), { name: 'First', slug })
      const taken = { code: 'CONFLICT', statusCode: 409, message: 'Slug already taken' }
      await t.rejects(services.organizations.create(actingAs(bob), { name: 'Second', slug }), taken, 'at creation')
      t.same(await fixture.database.db.selectFrom('organization_members').select('user_id').where('user_id', '=', bob.id).execute(),
        [], 'the refused creation left no membership')
      const other = await organizationOf(fixture, bob)
      await t.rejects(services.organizations.update(actingAs(bob), other.id, { slug }), taken, 'on a change')
      t.match(await services.organizations.get(actingAs(bob), other.id), { slug: other.slug }, 'the slug stayed')
      t.same(await fixture.audited('organization.updated'), [], 'the refused change is not recorded')
      t.equal((await fixture.audited('organization.created')).length, 2, 'only the two creations that happened')
    })

    t.test('two creations with one slug at once: exactly one organization', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const [alice, bob] = [await owner(fixture), await owner(fixture)]
      const slug = uniqueSlug()
      const outcomes = await Promise.allSettled([alice, bob].map(async (creator) =>
        await fixture.services.organizations.create(actingAs(creator), { name: 'Race', slug })))
      t.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, 'one created')
      t.match(outcomes.find((outcome) => outcome.status === 'rejected'), { reason: { code: 'CONFLICT', statusCode: 409 } })
      const rows = await fixture.database.db.selectFrom('organizations').select('id').where('slug', '=', slug).execute()
      t.equal(rows.length, 1)
      t.equal((await fixture.database.db.selectFrom('organization_members').select('user_id').execute()).length, 1,
        'one owner, of the one organization')
      t.equal((await fixture.audited('organization.created')).length, 1)
    })

    t.test('the list: a member sees their own organizations with their role; a global admin sees every one', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      const alice = await owner(fixture)
      const bob = await owner(fixture)
      const carol = await owner(fixture)
      const a = await organizationOf(fixture, alice, 'Alpha')
      const b = await organizationOf(fixture, bob, 'Beta')
      await join(fixture, a.id, bob.id, 'member')
      const listed = async (caller: ServiceAccount) => (await services.organizations.list(actingAs(caller), { sort: ['name'] })).data
        .map((organization) => [organization.id, organization.role])
      t.same(await listed(alice), [[a.id, 'owner']], 'alice: hers only')
      t.same(await listed(bob), [[a.id, 'member'], [b.id, 'owner']], 'bob: both, with his role in each')
      t.same(await listed(carol), [], 'carol: none')
      const admin = await owner(fixture, ['admin'])
      t.same(await listed(admin), [[a.id, null], [b.id, null]], 'an admin (manage_users): every one, role null')
      await join(fixture, b.id, admin.id, 'member')
      t.same(await listed(admin), [[a.id, null], [b.id, 'member']], 'with their role where they are a member')
      const superAdmin = await owner(fixture, ['super_admin'])
      t.same(await listed(superAdmin), [[a.id, null], [b.id, null]], 'a super_admin: every one')
      const searched = await services.organizations.list(actingAs(bob), { search: b.slug })
      t.same(searched.data.map((organization) => organization.id), [b.id], 'a search by slug within the caller\'s')
      const stranger = await services.organizations.list(actingAs(carol), { search: 'Alpha' })
      t.same(stranger.data, [], 'a search finds nothing the caller is not a member of')
    })

    t.test('get answers the caller\'s role; update renames and re-slugs, recorded with the change', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      t.match(await services.organizations.get(actingAs(bob), organization.id), { id: organization.id, role: 'member' })
      const slug = uniqueSlug()
      const updated = await services.organizations.update(actingAs(alice), organization.id, { name: 'Acme Renamed', slug })
      t.match(updated, { id: organization.id, name: 'Acme Renamed', slug, role: 'owner', created_at: organization.created_at })
      t.match(await services.organizations.get(actingAs(bob), organization.id), { name: 'Acme Renamed', slug })
      exactly(t, await fixture.audited('organization.updated'), [{ actor_id: alice.id, details: { organization_id: organization.id } }])
      await t.rejects(services.organizations.update(actingAs(alice), uuidv7(), { name: 'Ghost' }),
        { code: 'NOT_FOUND', message: 'Organization not found' })
      t.equal((await fixture.audited('organization.updated')).length, 1, 'a change of nothing is not recorded')
    })

    t.test('deleting: members and invitations go with the organization, users stay; sessions forget it', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services, database, repositories } = fixture
      const alice = await owner(fixture)
      const bob = await owner(fixture)
      const doomed = await organizationOf(fixture, alice)
      const kept = await organizationOf(fixture, bob)
      await join(fixture, doomed.id, bob.id, 'admin')
      await join(fixture, kept.id, alice.id, 'member')
      const now = Date.now()
      await database.db.insertInto('organization_invitations').values({
        id: uuidv7(),
        organization_id: doomed.id,
        email: 'invited@example.com',
        role: 'member',
        token_hash: randomBytes(32).toString('hex'),
        invited_by: alice.id,
        created_at: new Date(now).toISOString(),
        expires_at: new Date(now + 86_400_000).toISOString()
      }).execute()
      const pair = await sessionOf(fixture, bob)
      const selected = await services.sessions.refresh(pair.refresh_token, () => fixture.audit.recorded(contextFrom('192.0.2.40'), []),
        { organizationId: doomed.id })
      t.match(claimsOf(selected.pair.access_token), { org_id: doomed.id, org_roles: ['admin'] }, 'bob\'s session speaks for it')

      await services.organizations.remove(actingAs(alice), doomed.id)
      const { db } = database
      t.same(await db.selectFrom('organizations').select('id').where('id', '=', doomed.id).execute(), [], 'the organization is gone')
      t.same(await db.selectFrom('organization_members').select('user_id').where('organization_id', '=', doomed.id).execute(), [],
        'with its members')
      t.same(await db.selectFrom('organization_invitations').select('id').where('organization_id', '=', doomed.id).execute(), [],
        'and its invitations')
      t.not(await repositories.users.findById(alice.id), undefined, 'its owner\'s account stays')
      t.not(await repositories.users.findById(bob.id), undefined, 'its member\'s account stays')
      t.same((await db.selectFrom('organization_members').select(['user_id', 'role']).where('organization_id', '=', kept.id)
        .orderBy('role').execute()), [{ user_id: alice.id, role: 'member' }, { user_id: bob.id, role: 'owner' }],
      'another organization keeps its members')
      exactly(t, await fixture.audited('organization.deleted'), [{ actor_id: alice.id, details: { organization_id: doomed.id } }])
      t.same(await db.selectFrom('sessions').select('id').where('organization_id', '=', doomed.id).execute(), [],
        'no session speaks for it any more')
      const revoked = await db.selectFrom('revoked_tokens').select('jti').where('jti', '=', claimsOf(selected.pair.access_token).jti)
        .execute()
      t.equal(revoked.length, 1, 'the access token that spoke for it is revoked')
      const after = await services.sessions.refresh(selected.pair.refresh_token, () => fixture.audit.recorded(contextFrom('192.0.2.40'), []))
      t.notOk('org_id' in claimsOf(after.pair.access_token), 'the next refresh speaks for no organization')
      await t.rejects(services.organizations.remove(actingAs(alice), doomed.id), { code: 'NOT_FOUND', statusCode: 404 })
      t.equal((await fixture.audited('organization.deleted')).length, 1)
    })

    t.test('the members page: joining order, with a cursor that goes on', async (t) => {
      const { fixture, alice, organization } = await servicesWithOrganization(t, backend.url)
      const others = [await owner(fixture), await owner(fixture), await owner(fixture)]
      for (const other of others) await join(fixture, organization.id, other.id, 'member')
      const first = await fixture.services.organizations.listMembers(actingAs(alice), organization.id,
        { sort: ['created_at', 'id'], limit: 2, cursor: '' })
      t.same(first.data.map((member) => [member.id, member.role]), [[alice.id, 'owner'], [others[0]?.id, 'member']])
      t.match(first.data[0], { email: alice.email, name: 'Service Test' })
      if (first.meta.kind !== 'cursor' || first.meta.nextCursor === null) throw new Error('expected a cursor')
      const second = await fixture.services.organizations.listMembers(actingAs(alice), organization.id,
        { sort: ['created_at', 'id'], limit: 2, cursor: first.meta.nextCursor })
      t.same(second.data.map((member) => member.id), [others[1]?.id, others[2]?.id])
    })

    t.test('ranks: an admin neither changes nor removes an owner, nor grants owner; what they may do is recorded', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      const dave = await owner(fixture)
      await join(fixture, organization.id, dave.id, 'admin')
      const { id } = organization

      await t.rejects(services.organizations.updateMember(actingAs(dave), id, alice.id, 'member'), FORBIDDEN, 'an admin demotes no owner')
      await t.rejects(services.organizations.updateMember(actingAs(dave), id, alice.id, 'admin'), FORBIDDEN, 'not even to admin')
      await t.rejects(services.organizations.removeMember(actingAs(dave), id, alice.id), FORBIDDEN, 'nor removes one')
      await t.rejects(services.organizations.updateMember(actingAs(dave), id, bob.id, 'owner'), FORBIDDEN, 'nor grants owner')
      await t.rejects(services.organizations.updateMember(actingAs(dave), id, dave.id, 'owner'), FORBIDDEN, 'not to themselves either')
      await t.rejects(services.organizations.updateMember(actingAs(bob), id, bob.id, 'admin'), FORBIDDEN, 'a member grants no admin')
      t.equal(await roleOf(fixture, id, alice.id), 'owner')
      t.equal(await roleOf(fixture, id, bob.id), 'member')
      t.equal(await roleOf(fixture, id, dave.id), 'admin')
      t.same(await membershipEntries(fixture), [], 'nothing refused is recorded')
      t.same(await noticesTo(fixture, alice.email), [], 'nor told')

      t.match(await services.organizations.updateMember(actingAs(dave), id, bob.id, 'admin'), { id: bob.id, role: 'admin' },
        'an admin grants admin')
      t.match(await services.organizations.updateMember(actingAs(dave), id, bob.id, 'member'), { id: bob.id, role: 'member' },
        'and takes it back')
      exactly(t, await fixture.audited('membership.role_changed'), [
        { actor_id: dave.id, target_id: bob.id, details: { organization_id: id, role: 'admin', previous_role: 'member' } },
        { actor_id: dave.id, target_id: bob.id, details: { organization_id: id, role: 'member', previous_role: 'admin' } }
      ])
      await services.organizations.removeMember(actingAs(dave), id, bob.id)
      t.equal(await roleOf(fixture, id, bob.id), undefined, 'an admin removes a member')
      exactly(t, await fixture.audited('membership.removed'), [{ actor_id: dave.id, target_id: bob.id, details: { organization_id: id } }])

      const superAdmin = await owner(fixture, ['super_admin'])
      t.match(await services.organizations.updateMember(actingAs(superAdmin), id, dave.id, 'owner'), { role: 'owner' },
        'a super_admin, no member, acts as an owner: grants owner')
      t.same((await ownersOf(fixture, id)).sort(), [alice.id, dave.id].sort())
      const gone = '01890000-0000-7000-8000-000000000000'
      await t.rejects(services.organizations.updateMember(actingAs(superAdmin), gone, dave.id, 'owner'),
        { code: 'NOT_FOUND', message: 'Organization not found' }, 'an organization that does not exist is not found as such')
    })

    t.test('the last owner is neither demoted nor removed, and does not leave: 409', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      const { id } = organization
      await t.rejects(services.organizations.updateMember(actingAs(alice), id, alice.id, 'admin'), LAST_OWNER, 'demoting themselves')
      await t.rejects(services.organizations.removeMember(actingAs(alice), id, alice.id), LAST_OWNER, 'leaving')
      const superAdmin = await owner(fixture, ['super_admin'])
      await t.rejects(services.organizations.updateMember(actingAs(superAdmin), id, alice.id, 'member'), LAST_OWNER,
        'a super_admin demotes the last owner no more')
      await t.rejects(services.organizations.removeMember(actingAs(superAdmin), id, alice.id), LAST_OWNER, 'nor removes them')
      t.same(await ownersOf(fixture, id), [alice.id])
      t.same(await membershipEntries(fixture), [], 'nothing recorded')
      t.same(await noticesTo(fixture, alice.email), [], 'nothing told')

      await services.organizations.updateMember(actingAs(alice), id, bob.id, 'owner')
      await services.organizations.removeMember(actingAs(alice), id, alice.id)
      t.same(await ownersOf(fixture, id), [bob.id], 'with another owner, the first may leave')
      exactly(t, await fixture.audited('membership.left'), [{ actor_id: alice.id, target_id: alice.id, details: { organization_id: id } }])
      t.same(await fixture.audited('membership.removed'), [], 'leaving is no removal')
      t.same(await noticesTo(fixture, alice.email), [], 'and no notice to the one who left')
      await t.rejects(services.organizations.removeMember(actingAs(bob), id, bob.id), LAST_OWNER, 'now bob is the last')
    })

    t.test('two owners demoting each other at once, or leaving at once: one owner stays', async (t) => {
      const fixture = await buildServices(t, backend.url)
      const { services } = fixture
      for (let round = 0; round < 5; round++) {
        const alice = await owner(fixture)
        const bob = await owner(fixture)
        const organization = await organizationOf(fixture, alice)
        await join(fixture, organization.id, bob.id, 'owner')
        const demotions = await Promise.allSettled([
          services.organizations.updateMember(actingAs(alice), organization.id, bob.id, 'admin'),
          services.organizations.updateMember(actingAs(bob), organization.id, alice.id, 'admin')
        ])
        t.equal((await ownersOf(fixture, organization.id)).length, 1, `round ${round}: demotions leave one owner`)
        t.equal(demotions.filter((outcome) => outcome.status === 'fulfilled').length, 1, `round ${round}: one demotion happened`)
        const refused = demotions.find((outcome) => outcome.status === 'rejected')
        t.ok(refused !== undefined && [403, 409].includes((refused.reason as { statusCode: number }).statusCode), 'the other was refused')

        const carol = await owner(fixture)
        const dave = await owner(fixture)
        const other = await organizationOf(fixture, carol)
        await join(fixture, other.id, dave.id, 'owner')
        const leaving = await Promise.allSettled([
          services.organizations.removeMember(actingAs(carol), other.id, carol.id),
          services.organizations.removeMember(actingAs(dave), other.id, dave.id)
        ])
        t.equal((await ownersOf(fixture, other.id)).length, 1, `round ${round}: leavings leave one owner`)
        exactly(t, leaving.filter((outcome) => outcome.status === 'rejected'), [{ reason: LAST_OWNER }])
      }
    })

    t.test('a change and its audit entry commit together: when the entry cannot be stored, nothing changes', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      const { database } = fixture
      await refuseWrites(fixture, 'insert', 'audit_logs', 'audit storage refused')
      await t.rejects(services.organizations.create(actingAs(alice), { name: 'Unrecorded', slug: uniqueSlug() }), /audit storage refused/)
      t.equal((await database.db.selectFrom('organizations').select('id').execute()).length, 1, 'no organization without its entry')
      await t.rejects(services.organizations.update(actingAs(alice), organization.id, { name: 'Unrecorded' }), /audit storage refused/)
      t.match(await services.organizations.get(actingAs(alice), organization.id), { name: organization.name }, 'no rename')
      await t.rejects(services.organizations.updateMember(actingAs(alice), organization.id, bob.id, 'admin'), /audit storage refused/)
      t.equal(await roleOf(fixture, organization.id, bob.id), 'member', 'no new role')
      t.same(await noticesTo(fixture, bob.email), [], 'and no notice of it')
      await t.rejects(services.organizations.removeMember(actingAs(alice), organization.id, bob.id), /audit storage refused/)
      t.equal(await roleOf(fixture, organization.id, bob.id), 'member', 'no removal')
      await t.rejects(services.organizations.remove(actingAs(alice), organization.id), /audit storage refused/)
      t.equal((await database.db.selectFrom('organization_members').select('user_id')
        .where('organization_id', '=', organization.id).execute()).length, 2, 'no deletion: both members are there')
    })

    t.test('a role change or a removal and its notice commit together', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      await refuseWrites(fixture, 'insert', 'outbox', 'outbox storage refused')
      await t.rejects(services.organizations.updateMember(actingAs(alice), organization.id, bob.id, 'admin'), /outbox storage refused/)
      await t.rejects(services.organizations.removeMember(actingAs(alice), organization.id, bob.id), /outbox storage refused/)
      t.equal(await roleOf(fixture, organization.id, bob.id), 'member', 'neither happened')
      t.same(await membershipEntries(fixture), [], 'nor was recorded')
    })

    t.test('the member is told of a new role and of a removal, through the outbox', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url, 'Notified Org')
      await services.organizations.updateMember(actingAs(alice), organization.id, bob.id, 'admin')
      exactly(t, await noticesTo(fixture, bob.email), [{ subject: 'Your role in an organization was changed', text: /Notified Org/ }])
      await services.organizations.removeMember(actingAs(alice), organization.id, bob.id)
      exactly(t, await noticesTo(fixture, bob.email), [
        { subject: 'Your role in an organization was changed' },
        { subject: 'You were removed from an organization', text: /Notified Org/ }
      ])
      t.same(await noticesTo(fixture, alice.email), [], 'nothing to the one who made the changes')
    })

    t.test('a new role or a removal revokes the member\'s access tokens for the organization; the next refresh carries the new membership', async (t) => {
      const { fixture, services, alice, bob, organization } = await withMember(t, backend.url)
      const { database } = fixture
      const recordedFor = () => fixture.audit.recorded(contextFrom('192.0.2.41'), [])
      const selected = await services.sessions.refresh((await sessionOf(fixture, bob)).refresh_token, recordedFor,
        { organizationId: organization.id })
      t.match(claimsOf(selected.pair.access_token), { org_id: organization.id, org_roles: ['member'] })
      const revoked = async (jti: string) =>
        (await database.db.selectFrom('revoked_tokens').select('jti').where('jti', '=', jti).execute()).length === 1

      await services.organizations.updateMember(actingAs(alice), organization.id, bob.id, 'admin')
      t.ok(await revoked(claimsOf(selected.pair.access_token).jti), 'the token with the old role is revoked')
      const promoted = await services.sessions.refresh(selected.pair.refresh_token, recordedFor)
      t.match(claimsOf(promoted.pair.access_token), { org_id: organization.id, org_roles: ['admin'] },
        'the next refresh speaks for the organization with the new role')

      const selection = { organizationId: organization.id }
      const reselected = await services.sessions.refresh(promoted.pair.refresh_token, recordedFor, selection)
      await services.organizations.removeMember(actingAs(alice), organization.id, bob.id)
      t.ok(await revoked(claimsOf(reselected.pair.access_token).jti), 'removed: the token for the organization is revoked')
      const removed = await services.sessions.refresh(reselected.pair.refresh_token, recordedFor)
      const claims = claimsOf(removed.pair.access_token)
      t.notOk('org_id' in claims || 'org_roles' in claims, 'the next refresh speaks for no organization')
      t.same(await database.db.selectFrom('sessions').select('id').where('organization_id', '=', organization.id).execute(), [],
        'the session forgot it')
      await t.rejects(services.sessions.refresh(removed.pair.refresh_token, recordedFor, selection),
        { code: 'NOT_FOUND', message: 'Organization not found' }, 'and cannot select it again')
    })
  })
}
