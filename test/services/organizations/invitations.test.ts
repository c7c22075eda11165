import t, { type Test } from 'tap'
import type { OrganizationRole } from '../../../schemas/organizations.js'
import { Errors } from '../../../src/errors.js'
import { INVITATION_TTL_MS } from '../../../src/services/organizations/invitations.js'
import { uniqueEmail } from '../../helpers/accounts.js'
import { backends } from '../../helpers/database.js'
import {
  APP_URL, join, organizationOf, type ServiceAccount, servicesWithOrganization, servicesWithOwner
} from '../../helpers/organizations.js'
import { actingAs, owner, registered, type ServiceFixture, unverifyAddress } from '../../helpers/services.js'

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const INVALID_TOKEN = { code: 'INVALID_ONE_TIME_TOKEN', statusCode: 400 }
const CONFLICT = { code: 'CONFLICT', statusCode: 409 }

/** The services (their messages linking to APP_URL), alice, and an organization she created, named `name`. */
async function invitingOrganization (t: Test, url: string | null, name?: string) {
  return await servicesWithOrganization(t, url, { env: { APP_URL }, name })
}

async function membersOf ({ database }: ServiceFixture, organizationId: string) {
  return await database.db.selectFrom('organization_members').select(['user_id', 'role'])
    .where('organization_id', '=', organizationId).execute()
}

/** Every invitation row, open or closed (spent, withdrawn). */
async function invitationRows ({ database }: ServiceFixture) {
  return await database.db.selectFrom('organization_invitations').selectAll().execute()
}

/** The invitations still open: neither accepted nor withdrawn. */
async function openInvitations ({ database }: ServiceFixture) {
  return await database.db.selectFrom('organization_invitations').select(['id', 'email', 'role'])
    .where('closed_at', 'is', null).execute()
}

/**
 * The last invitation message to `to`, delivered or still in the outbox (one stored with the
 * services' clock set ahead waits for the outbox's own clock): its text, and the token it carries.
 */
async function invitationSent ({ database, delivered, sent }: ServiceFixture, to: string) {
  await delivered()
  const waiting = await database.db.selectFrom('outbox').select(['recipient as to', 'subject', 'text_body as text'])
    .where('recipient', '=', to).orderBy('created_at').orderBy('id').execute()
  const message = [...sent, ...waiting].filter((mail) => mail.to === to && mail.subject.startsWith('An invitation to an organization')).at(-1)
  const token = message === undefined ? undefined : /Token: ([A-Za-z0-9_-]+)/.exec(message.text)?.[1]
  if (message === undefined || token === undefined) throw new Error(`no invitation with a token to ${to}`)
  return { message, token }
}

/** Invites `email` as `role` and answers the invitation with the token its message carries. */
async function invited (fixture: ServiceFixture, inviter: ServiceAccount, organizationId: string, email: string, role: OrganizationRole = 'member') {
  const invitation = await fixture.services.invitations.invite(actingAs(inviter), organizationId, { email, role })
  return { invitation, token: (await invitationSent(fixture, email)).token }
}

/** A new account (`bob`) invited as `role` to a new organization of `inviter`'s: the invitation and its token. */
async function newInvitee (fixture: ServiceFixture, inviter: ServiceAccount, role: OrganizationRole = 'member') {
  const bob = await owner(fixture)
  const organization = await organizationOf(fixture, inviter)
  return { bob, organization, ...await invited(fixture, inviter, organization.id, bob.email, role) }
}

/** Invites `count` new addresses (named after `prefix`) as members: the invitations. */
async function inviteMany (
  { services }: ServiceFixture, inviter: ServiceAccount, organizationId: string, count: number, prefix: string
) {
  const invitations = []
  for (let n = 0; n < count; n++) {
    invitations.push(await services.invitations.invite(actingAs(inviter), organizationId, { email: uniqueEmail(prefix), role: 'member' }))
  }
  return invitations
}

/** The hour's limit is reached (`why`): one more invitation is 429, and no more than 50 messages went out. */
async function limitReached (
  t: Test, fixture: ServiceFixture, inviter: ServiceAccount, organizationId: string, why: string
) {
  await t.rejects(fixture.services.invitations.invite(actingAs(inviter), organizationId, { email: uniqueEmail('more'), role: 'member' }),
    Errors.RATE_LIMITED, why)
  await fixture.delivered()
  const messages = fixture.sent.filter((mail) => mail.subject.startsWith('An invitation to an organization'))
  t.equal(messages.length, 50, 'no more than 50 messages went out')
}

for (const backend of backends()) {
  t.test(`invitations (${backend.name})`, async (t) => {
    t.test('an invitation is stored with its message: the token only in the message, hashed in the store', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url, 'Invited Org')
      const { database } = fixture
      const email = uniqueEmail('invitee')
      const invitation = await services.invitations.invite(actingAs(alice), organization.id, { email: email.toUpperCase(), role: 'admin' })
      t.match(invitation, { email, role: 'admin', invited_by: alice.id })
      t.equal(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at), INVITATION_TTL_MS, 'good for 7 days')
      t.equal(INVITATION_TTL_MS, 7 * DAY)
      // Read before the outbox is drained: the message was stored with the invitation.
      const stored = await database.db.selectFrom('outbox').select(['recipient', 'subject', 'text_body', 'html_body'])
        .where('recipient', '=', email).execute()
      // The outbox may have sent it already (it is kicked when the invitation is stored).
      t.ok(stored.length === 1 || fixture.sent.some((mail) => mail.to === email), 'the message was stored with the invitation, and waits or went out')
      const { message, token } = await invitationSent(fixture, email)
      t.match(message.subject, /^An invitation to an organization on /)
      t.notMatch(message.subject, /Invited Org/, 'the subject names no organization: its name is chosen by anyone')
      t.match(message.text.replaceAll('\u200b', ''), '“Invited Org”', 'the body quotes the name')
      t.match(message.text, `${APP_URL}/accept-invitation?token=${token}`, 'a link to the application')
      t.match(message.text, `Token: ${token}`, 'and the bare token')
      t.ok(token.length >= 32, 'a token long enough not to be guessed')
      t.notOk(JSON.stringify(invitation).includes(token), 'the answer holds no token')

      const rows = await invitationRows(fixture)
      t.equal(rows.length, 1)
      t.notOk(JSON.stringify(rows).includes(token), 'the stored row holds no token in the clear')
      t.not(rows[0]?.token_hash, token)
      t.match(rows[0], { organization_id: organization.id, email, role: 'admin', invited_by: alice.id })
      const entries = await fixture.audited('invitation.created')
      t.equal(entries.length, 1)
      t.match(entries[0], { actor_id: alice.id, details: { organization_id: organization.id } })
      t.notOk(JSON.stringify(entries).includes(token), 'nor does the audit entry')
      t.notMatch(JSON.stringify(entries[0]?.details), /token|secret|key/i)
      const listed = await services.invitations.list(actingAs(alice), organization.id, {})
      t.match(listed.data, [{ id: invitation.id, email, role: 'admin' }])
      t.notOk(JSON.stringify(listed).includes(token), 'nor the list')
    })

    t.test('accepting: the invited, verified account becomes a member with the role, once', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const bob = await owner(fixture)
      const { invitation, token } = await invited(fixture, alice, organization.id, bob.email, 'admin')
      t.match(await services.invitations.accept(actingAs(bob), token), { id: organization.id, role: 'admin' })
      t.same((await membersOf(fixture, organization.id)).find((member) => member.user_id === bob.id), { user_id: bob.id, role: 'admin' })
      t.same(await openInvitations(fixture), [], 'the invitation is spent')
      t.same((await services.invitations.list(actingAs(alice), organization.id, {})).data, [], 'and no longer listed')
      const added = await fixture.audited('membership.added')
      t.equal(added.length, 1)
      t.match(added[0], { actor_id: bob.id, target_id: bob.id, details: { organization_id: organization.id, role: 'admin' } })
      await t.rejects(services.invitations.accept(actingAs(bob), token), INVALID_TOKEN, 'a second use is refused')
      const carol = await owner(fixture)
      await t.rejects(services.invitations.accept(actingAs(carol), token), INVALID_TOKEN, 'by anyone')
      await t.rejects(services.invitations.accept(actingAs(bob), 'not-a-token-at-all'), INVALID_TOKEN, 'an unknown token')
      t.equal((await fixture.audited('membership.added')).length, 1, 'no other acceptance recorded')
      await t.rejects(services.invitations.revoke(actingAs(alice), organization.id, invitation.id), { code: 'NOT_FOUND' },
        'nothing left to revoke')
      const trail = await fixture.database.db.selectFrom('audit_logs').select(['event', 'details']).execute()
      t.notOk(JSON.stringify(trail).includes(token), 'the token is nowhere in the audit log')
      for (const { event, details } of trail.filter((entry) => /^(organization|membership|invitation)\./.test(entry.event))) {
        t.notMatch(details, /token|secret|key/i, `${event}: no secret-sounding words`)
      }
    })

    t.test('an invitation expires after 7 days', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const { clock } = fixture
      const [bob, carol] = [await owner(fixture), await owner(fixture)]
      const forBob = await invited(fixture, alice, organization.id, bob.email)
      const forCarol = await invited(fixture, alice, organization.id, carol.email)
      clock.aheadMs = INVITATION_TTL_MS - MINUTE
      t.match(await services.invitations.accept(actingAs(bob), forBob.token), { role: 'member' }, 'a minute before: accepted')
      clock.aheadMs = INVITATION_TTL_MS + 1000
      await t.rejects(services.invitations.accept(actingAs(carol), forCarol.token), INVALID_TOKEN, 'a second after: expired')
      const members = (await membersOf(fixture, organization.id)).map((member) => member.user_id)
      t.same(members.sort(), [alice.id, bob.id].sort(), 'carol did not join')
      const listed = await services.invitations.list(actingAs(alice), organization.id, {})
      t.same(listed.data.map((invitation) => invitation.id), [forCarol.invitation.id], 'listed, expired, until revoked')
      const again = await invited(fixture, alice, organization.id, carol.email)
      t.match(await services.invitations.accept(actingAs(carol), again.token), { role: 'member' }, 'expired: carol may be invited again')
    })

    t.test('another account cannot use the token (403 INVITATION_EMAIL_MISMATCH); the invitation stays good', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const bob = await owner(fixture)
      const mallory = await owner(fixture)
      const { token } = await invited(fixture, alice, organization.id, bob.email, 'admin')
      await t.rejects(services.invitations.accept(actingAs(mallory), token), Errors.INVITATION_EMAIL_MISMATCH)
      t.equal((await membersOf(fixture, organization.id)).length, 1, 'mallory did not join')
      t.equal((await openInvitations(fixture)).length, 1, 'the invitation is still there')
      t.same(await fixture.audited('membership.added'), [])
      t.match(await services.invitations.accept(actingAs(bob), token), { role: 'admin' }, 'and bob accepts it')
    })

    t.test('an account whose address is unverified cannot accept (403 EMAIL_NOT_VERIFIED); verified, it can', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const { repositories } = fixture
      const unclaimed = await registered(fixture)
      const first = await invited(fixture, alice, organization.id, unclaimed.email)
      await t.rejects(services.invitations.accept(actingAs(unclaimed), first.token), Errors.EMAIL_NOT_VERIFIED, 'never verified')
      const bob = await owner(fixture)
      await unverifyAddress(fixture, bob.id)
      const second = await invited(fixture, alice, organization.id, bob.email)
      await t.rejects(services.invitations.accept(actingAs(bob), second.token), Errors.EMAIL_NOT_VERIFIED, 'verified no longer')
      t.equal((await membersOf(fixture, organization.id)).length, 1, 'neither joined')
      t.equal((await openInvitations(fixture)).length, 2, 'both invitations are still good')
      await repositories.users.markEmailVerified(bob.id, bob.email)
      t.match(await services.invitations.accept(actingAs(bob), second.token), { role: 'member' }, 'once verified, bob joins')
    })

    t.test('inviting a member, or an address with a pending invitation, is 409; nothing is sent', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const bob = await owner(fixture)
      await join(fixture, organization.id, bob.id, 'member')
      await t.rejects(services.invitations.invite(actingAs(alice), organization.id, { email: bob.email, role: 'admin' }), CONFLICT,
        'a member')
      await t.rejects(services.invitations.invite(actingAs(alice), organization.id, { email: bob.email.toUpperCase(), role: 'admin' }),
        CONFLICT, 'a member, the address in capitals')
      const email = uniqueEmail('pending')
      await services.invitations.invite(actingAs(alice), organization.id, { email, role: 'member' })
      await t.rejects(services.invitations.invite(actingAs(alice), organization.id, { email, role: 'admin' }), CONFLICT, 'pending')
      t.equal((await openInvitations(fixture)).length, 1, 'one invitation stored')
      t.equal((await fixture.audited('invitation.created')).length, 1, 'one recorded')
      await fixture.delivered()
      t.equal(fixture.sent.filter((mail) => mail.subject.startsWith('An invitation to an organization')).length, 1, 'one sent')
      const other = await organizationOf(fixture, alice, 'Other')
      await t.resolves(services.invitations.invite(actingAs(alice), other.id, { email, role: 'member' }),
        'pending here is no bar to another organization')

      const twice = uniqueEmail('twice')
      const outcomes = await Promise.allSettled([0, 1].map(async () =>
        await services.invitations.invite(actingAs(alice), organization.id, { email: twice, role: 'member' })))
      t.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, 'one of two invitations sent at once')
      t.match(outcomes.find((outcome) => outcome.status === 'rejected'), { reason: CONFLICT }, 'the other is pending: 409')
      t.equal((await openInvitations(fixture)).filter((invitation) => invitation.email === twice).length, 1)
    })

    t.test('accepting while a member already: 409', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const bob = await owner(fixture)
      const { token } = await invited(fixture, alice, organization.id, bob.email, 'admin')
      await join(fixture, organization.id, bob.id, 'member')
      await t.rejects(services.invitations.accept(actingAs(bob), token), CONFLICT)
      t.same((await membersOf(fixture, organization.id)).find((member) => member.user_id === bob.id)?.role, 'member',
        'the role stays')
      t.same(await fixture.audited('membership.added'), [])
    })

    t.test('nobody invites to a role above their own', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const dave = await owner(fixture)
      await join(fixture, organization.id, dave.id, 'admin')
      const email = uniqueEmail('ranked')
      await t.rejects(services.invitations.invite(actingAs(dave), organization.id, { email, role: 'owner' }), { code: 'FORBIDDEN', statusCode: 403 },
        'an admin invites no owner')
      t.same(await invitationRows(fixture), [], 'nothing stored')
      t.same(await fixture.audited('invitation.created'), [], 'nothing recorded')
      await fixture.delivered()
      t.same(fixture.sent.filter((mail) => mail.to === email), [], 'nothing sent')
      t.match(await services.invitations.invite(actingAs(dave), organization.id, { email, role: 'admin' }), { role: 'admin' },
        'an admin invites an admin')
      t.match(await services.invitations.invite(actingAs(alice), organization.id, { email: uniqueEmail('owner'), role: 'owner' }),
        { role: 'owner' }, 'an owner invites an owner')
    })

    t.test('at most 50 invitations per organization per hour: then 429 RATE_LIMITED', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const { clock } = fixture
      const bob = await owner(fixture)
      const other = await organizationOf(fixture, bob, 'Other')
      await join(fixture, organization.id, bob.id, 'admin')
      await inviteMany(fixture, alice, organization.id, 25, 'many')
      await inviteMany(fixture, bob, organization.id, 25, 'many')
      const email = uniqueEmail('one-too-many')
      await t.rejects(services.invitations.invite(actingAs(alice), organization.id, { email, role: 'member' }), Errors.RATE_LIMITED)
      t.equal((await invitationRows(fixture)).length, 50, 'the 51st was not stored')
      t.equal((await fixture.audited('invitation.created')).length, 50)
      await fixture.delivered()
      t.same(fixture.sent.filter((mail) => mail.to === email), [], 'nor sent')
      await t.resolves(services.invitations.invite(actingAs(bob), other.id, { email, role: 'member' }),
        'another organization has a count of its own')
      clock.aheadMs = HOUR + MINUTE
      await t.resolves(services.invitations.invite(actingAs(alice), organization.id, { email: uniqueEmail('later'), role: 'member' }),
        'an hour later, invitations go out again')
    })

    t.test('one inviter sends at most 50 invitations an hour, however many organizations they own', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const others = [await organizationOf(fixture, alice, 'Second'), await organizationOf(fixture, alice, 'Third')]
      await inviteMany(fixture, alice, organization.id, 20, 'first')
      await inviteMany(fixture, alice, others[0]?.id ?? '', 20, 'second')
      await inviteMany(fixture, alice, others[1]?.id ?? '', 10, 'third')
      await limitReached(t, fixture, alice, others[1]?.id ?? '', '50 sent by alice this hour, over three organizations')
      const bob = await owner(fixture)
      await join(fixture, organization.id, bob.id, 'admin')
      await t.resolves(services.invitations.invite(actingAs(bob), organization.id, { email: uniqueEmail('by-bob'), role: 'member' }),
        'another inviter of the same organization has a count of their own')
    })

    t.test('one address receives at most 20 invitations a day, from everyone together', async (t) => {
      const { fixture, services } = await invitingOrganization(t, backend.url)
      const email = uniqueEmail('popular')
      for (let n = 0; n < 20; n++) {
        const inviter = await owner(fixture)
        const theirs = await organizationOf(fixture, inviter, `Inviting ${n}`)
        await services.invitations.invite(actingAs(inviter), theirs.id, { email, role: 'member' })
      }
      const late = await owner(fixture)
      const lateOrganization = await organizationOf(fixture, late, 'Late')
      await t.rejects(services.invitations.invite(actingAs(late), lateOrganization.id, { email, role: 'member' }), Errors.RATE_LIMITED,
        'the 21st invitation of the day to one address is refused')
      await t.resolves(services.invitations.invite(actingAs(late), lateOrganization.id, { email: uniqueEmail('other'), role: 'member' }),
        'the same inviter still reaches other addresses')
      fixture.clock.aheadMs = DAY + MINUTE
      await t.resolves(services.invitations.invite(actingAs(late), lateOrganization.id, { email, role: 'member' }), 'a day later it is reached again')
    })

    t.test('withdrawing an invitation does not raise the hourly limit', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const sent = await inviteMany(fixture, alice, organization.id, 50, 'withdrawn')
      for (const invitation of sent.slice(0, 10)) {
        await services.invitations.revoke(actingAs(alice), organization.id, invitation.id)
      }
      await limitReached(t, fixture, alice, organization.id, '50 were sent this hour, 10 of them withdrawn since')
    })

    t.test('accepted invitations still count toward the hourly limit', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      for (let n = 0; n < 3; n++) {
        const invitee = await owner(fixture)
        const { token } = await invited(fixture, alice, organization.id, invitee.email)
        await services.invitations.accept(actingAs(invitee), token)
      }
      await inviteMany(fixture, alice, organization.id, 47, 'counted')
      await limitReached(t, fixture, alice, organization.id, '50 were sent this hour, 3 of them accepted since')
    })

    t.test('invitations sent at once do not pass the limit together', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const outcomes = await Promise.allSettled(Array.from({ length: 60 }, async () =>
        await services.invitations.invite(actingAs(alice), organization.id, { email: uniqueEmail('burst'), role: 'member' })))
      t.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 50, '50 sent')
      const refused = outcomes.filter((outcome) => outcome.status === 'rejected')
      t.equal(refused.length, 10)
      t.ok(refused.every((outcome) => outcome.reason instanceof Errors.RATE_LIMITED), 'the rest refused: 429')
      t.equal((await invitationRows(fixture)).length, 50)
    })

    t.test('two acceptances of one token at once: exactly one membership', async (t) => {
      const { fixture, services, alice } = await servicesWithOwner(t, backend.url, { APP_URL })
      for (let round = 0; round < 5; round++) {
        const { bob, organization, token } = await newInvitee(fixture, alice, 'admin')
        const outcomes = await Promise.allSettled([
          services.invitations.accept(actingAs(bob), token),
          services.invitations.accept(actingAs(bob), token)
        ])
        t.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1, `round ${round}: one acceptance`)
        const refused = outcomes.find((outcome) => outcome.status === 'rejected')
        t.ok(refused !== undefined && [400, 409].includes((refused.reason as { statusCode: number }).statusCode),
          `round ${round}: the other refused`)
        t.same((await membersOf(fixture, organization.id)).filter((member) => member.user_id === bob.id), [{ user_id: bob.id, role: 'admin' }],
          `round ${round}: one membership`)
        t.equal((await fixture.audited('membership.added')).filter((entry) => entry.target_id === bob.id).length, 1,
          `round ${round}: one entry`)
      }
      t.same(await openInvitations(fixture), [], 'every invitation spent')
    })

    t.test('an acceptance and a withdrawal at once: one of them, never both', async (t) => {
      const { fixture, services, alice } = await servicesWithOwner(t, backend.url, { APP_URL })
      for (let round = 0; round < 5; round++) {
        const { bob, organization, invitation, token } = await newInvitee(fixture, alice)
        const [accepted, revoked] = await Promise.allSettled([
          services.invitations.accept(actingAs(bob), token),
          services.invitations.revoke(actingAs(alice), organization.id, invitation.id)
        ])
        t.not(accepted.status, revoked.status, `round ${round}: exactly one succeeded`)
        const joined = (await membersOf(fixture, organization.id)).some((member) => member.user_id === bob.id)
        t.equal(joined, accepted.status === 'fulfilled', `round ${round}: a member only if accepted`)
        const entries = (await fixture.audited('invitation.revoked')).concat(await fixture.audited('membership.added'))
          .filter((entry) => entry.details.organization_id === organization.id)
        t.equal(entries.length, 1, `round ${round}: one of the two recorded`)
      }
    })

    t.test('a withdrawn invitation no longer works; another organization\'s is not found', async (t) => {
      const { fixture, services, alice, organization } = await invitingOrganization(t, backend.url)
      const bob = await owner(fixture)
      const other = await organizationOf(fixture, bob)
      const { invitation, token } = await invited(fixture, alice, organization.id, bob.email)
      await t.rejects(services.invitations.revoke(actingAs(bob), other.id, invitation.id), { code: 'NOT_FOUND', statusCode: 404 },
        'not through another organization')
      t.equal((await openInvitations(fixture)).length, 1, 'still there')
      await services.invitations.revoke(actingAs(alice), organization.id, invitation.id)
      t.same(await openInvitations(fixture), [], 'withdrawn')
      t.same((await services.invitations.list(actingAs(alice), organization.id, {})).data, [], 'and no longer listed')
      const revoked = await fixture.audited('invitation.revoked')
      t.equal(revoked.length, 1)
      t.match(revoked[0], { actor_id: alice.id, details: { organization_id: organization.id } })
      await t.rejects(services.invitations.accept(actingAs(bob), token), INVALID_TOKEN, 'the token is dead')
      t.equal((await membersOf(fixture, organization.id)).length, 1)
    })
  })
}
