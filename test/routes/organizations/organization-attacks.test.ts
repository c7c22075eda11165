import t from 'tap'
import { type Account, claimsOf, createAccount, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail, type Method, OrganizationHarness, refused, uniqueSlug } from '../../helpers/organizations.js'

/**
 * The attacks a reviewer would try on organizations: ids of another organization in the path,
 * an admin reaching for owner, invitation tokens reused or taken to another address, tokens
 * that outlive a membership or a role, selecting an organization one does not belong to. Each
 * refusal is checked to have changed nothing.
 */

const NOT_FOUND = { error: { code: 'NOT_FOUND', message: 'Organization not found' } }

/** The shared calls; what is stored of an organization, to show a refusal changed nothing; the IDOR setting. */
class Harness extends OrganizationHarness {
  /** Everything stored of an organization: itself, its members' roles, its invitations. */
  async snapshot (organizationId: string) {
    const db = this.app.database.db
    const [organization, members, invitations] = await Promise.all([
      db.selectFrom('organizations').selectAll().where('id', '=', organizationId).executeTakeFirst(),
      db.selectFrom('organization_members').select(['user_id', 'role']).where('organization_id', '=', organizationId)
        .orderBy('user_id').execute(),
      db.selectFrom('organization_invitations').selectAll().where('organization_id', '=', organizationId)
        .orderBy('id').execute()
    ])
    const open = invitations.filter((invitation) => invitation.closed_at === null)
    return { organization, members, invitations, open }
  }

  /**
   * An attacker who owns an organization (`own`), and a victim organization with its owner, a
   * member and an invitation pending for `invitee`; `before`, what is stored of the victim.
   */
  async victimAndAttacker () {
    const attacker = await createAccount(this.app)
    const own = await this.organization(attacker, 'Attacker\'s')
    const victimOwner = await createAccount(this.app)
    const victim = await this.organization(victimOwner, 'Victim')
    const victimMember = await this.member(victimOwner, victim.id, 'member')
    const invitee = await createAccount(this.app)
    const pending = await this.invite(victimOwner, victim.id, invitee.email, 'member')
    const before = await this.snapshot(victim.id)
    return { attacker, own, victimOwner, victim, victimMember, invitee, pending, before }
  }
}

/** Whether an access token speaks for an organization. */
function orgClaims (token: string) {
  const claims = claimsOf(token)
  return { org_id: claims.org_id, org_roles: claims.org_roles }
}

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url)
    const h = new Harness(app, smtp)

    t.test('IDOR: another organization\'s id in the path is 404 on every route, and nothing changes', async (t) => {
      const { attacker, own, victimOwner, victim, victimMember, invitee, pending, before } = await h.victimAndAttacker()
      const path = `/organizations/${victim.id}`

      const routes: Array<[Method, string, Record<string, unknown>?]> = [
        ['GET', path], ['PATCH', path, { name: 'Pwned', slug: uniqueSlug('pwned') }], ['DELETE', path],
        ['GET', `${path}/members`], ['PATCH', `${path}/members/${victimMember.id}`, { role: 'owner' }],
        ['PATCH', `${path}/members/${victimOwner.id}`, { role: 'member' }],
        ['DELETE', `${path}/members/${victimMember.id}`], ['DELETE', `${path}/members/${victimOwner.id}`],
        ['GET', `${path}/invitations`], ['POST', `${path}/invitations`, { email: attacker.email, role: 'owner' }],
        ['DELETE', `${path}/invitations/${pending.invitation.id}`]
      ]
      // As an owner of another organization, and as that organization's selected token.
      const scoped = await h.selected(attacker, own.id)
      for (const token of [attacker.token, scoped.access_token]) {
        for (const [method, url, payload] of routes) {
          const answer = await h.call(token, method, url, payload)
          t.equal(answer.statusCode, 404, `${method} ${url}`)
          t.same(answer.json(), NOT_FOUND)
        }
      }
      t.same(await h.snapshot(victim.id), before, 'the victim organization, its members and invitations are as they were')
      t.notOk((await h.call(attacker, 'GET', '/organizations')).json().data.some((item: { id: string }) => item.id === victim.id))
      t.equal((await h.accept(invitee, pending.token)).statusCode, 200, 'the pending invitation still works for its invitee')
    })

    t.test('IDOR: a member or invitation of another organization under one\'s own organization\'s path is 404; nothing changes', async (t) => {
      const { attacker, own, victimOwner, victim, victimMember, invitee, pending, before } = await h.victimAndAttacker()
      const ownBefore = await h.snapshot(own.id)
      const path = `/organizations/${own.id}`

      for (const [method, url, payload] of [
        ['PATCH', `${path}/members/${victimMember.id}`, { role: 'admin' }],
        ['PATCH', `${path}/members/${victimOwner.id}`, { role: 'member' }],
        ['DELETE', `${path}/members/${victimMember.id}`],
        ['DELETE', `${path}/members/${victimOwner.id}`],
        ['DELETE', `${path}/invitations/${pending.invitation.id}`]
      ] as Array<[Method, string, Record<string, unknown>?]>) {
        const answer = await h.call(attacker, method, url, payload)
        t.equal(answer.statusCode, 404, `${method} ${url}`)
        t.equal(answer.json().error.code, 'NOT_FOUND')
      }
      t.same(await h.snapshot(victim.id), before, 'the other organization is as it was')
      t.same(await h.snapshot(own.id), ownBefore, 'and one\'s own: nobody was added to it')
      t.same(await h.audited('membership.removed', victim.id), [])
      t.same(await h.audited('membership.role_changed', victim.id), [])
      t.same(await h.audited('invitation.revoked', victim.id), [])
      t.equal((await h.accept(invitee, pending.token)).statusCode, 200, 'the invitation still works for its invitee')
      t.match((await h.accept(invitee, pending.token)).json(), { error: { code: 'INVALID_ONE_TIME_TOKEN' } })
    })

    t.test('a member of one organization reads none of another\'s members or invitations (404)', async (t) => {
      const reader = await createAccount(app)
      const mine = await h.organization(reader, 'Mine')
      const otherOwner = await createAccount(app)
      const other = await h.organization(otherOwner, 'Other')
      await h.invite(otherOwner, other.id, uniqueEmail('secret'), 'admin')
      const member = await h.member(reader, mine.id, 'member')
      for (const account of [reader, member]) {
        for (const url of [`/organizations/${other.id}/members`, `/organizations/${other.id}/invitations`,
          `/organizations/${other.id}/members?search=${encodeURIComponent(otherOwner.email)}`]) {
          const answer = await h.call(account, 'GET', url)
          t.equal(answer.statusCode, 404, url)
          t.same(answer.json(), NOT_FOUND)
          t.notMatch(answer.body, otherOwner.email, 'no address leaks')
        }
      }
    })

    t.test('role escalation by an org admin: no owner invited, promoted or demoted, no owner removed; nothing changes', async (t) => {
      const { owner, organization, admin, member } = await h.team('Escalation')
      const before = await h.snapshot(organization.id)
      const path = `/organizations/${organization.id}`
      const accomplice = uniqueEmail('accomplice')

      const attempts: Array<[string, Method, string, Record<string, unknown>?]> = [
        ['invite an owner', 'POST', `${path}/invitations`, { email: accomplice, role: 'owner' }],
        ['invite oneself again as owner', 'POST', `${path}/invitations`, { email: admin.email, role: 'owner' }],
        ['promote oneself to owner', 'PATCH', `${path}/members/${admin.id}`, { role: 'owner' }],
        ['promote another to owner', 'PATCH', `${path}/members/${member.id}`, { role: 'owner' }],
        ['demote the owner to admin', 'PATCH', `${path}/members/${owner.id}`, { role: 'admin' }],
        ['demote the owner to member', 'PATCH', `${path}/members/${owner.id}`, { role: 'member' }],
        ['remove the owner', 'DELETE', `${path}/members/${owner.id}`],
        ['delete the organization', 'DELETE', path]
      ]
      for (const [what, method, url, payload] of attempts) {
        const answer = await h.call(admin, method, url, payload)
        t.ok([403, 409].includes(answer.statusCode), `${what}: refused (${answer.statusCode})`)
        if (what !== 'invite oneself again as owner') refused(t, answer, 403, 'FORBIDDEN')
      }
      t.same(await h.snapshot(organization.id), before, 'roles, members and invitations are as they were')
      t.same(await h.audited('membership.role_changed', organization.id), [], 'no change audited')
      t.same(await h.audited('membership.removed', organization.id), [])
      t.equal((await h.audited('invitation.created', organization.id)).length, 2, 'only the two invitations that made the members')
      t.equal(h.smtp.received.filter((mail) => mail.to.includes(accomplice)).length, 0, 'no invitation was queued')

      const selfPromotion = await h.call(member, 'PATCH', `${path}/members/${member.id}`, { role: 'admin' })
      refused(t, selfPromotion, 403, 'FORBIDDEN', 'Permission denied. Requires: members:update')
      const selfInvite = await h.call(member, 'POST', `${path}/invitations`, { email: accomplice, role: 'member' })
      refused(t, selfInvite, 403, 'FORBIDDEN', 'Permission denied. Requires: members:invite')

      const sessionOfAdmin = await h.selected(admin, organization.id)
      t.same(orgClaims(sessionOfAdmin.access_token), { org_id: organization.id, org_roles: ['admin'] })
      const withScopedToken = await h.call(sessionOfAdmin.access_token, 'PATCH', `${path}/members/${admin.id}`, { role: 'owner' })
      refused(t, withScopedToken, 403, 'FORBIDDEN')
      t.same(await h.snapshot(organization.id), before, 'still as it was')
    })

    t.test('two owners demoting or removing each other at once leave one owner', async (t) => {
      for (const [method, payload] of [['PATCH', { role: 'admin' }], ['DELETE', undefined]] as const) {
        const first = await createAccount(app)
        const organization = await h.organization(first, `Race ${method}`)
        const second = await h.member(first, organization.id, 'owner')
        const path = `/organizations/${organization.id}/members`
        const answers = await Promise.all([
          h.call(first, method, `${path}/${second.id}`, payload),
          h.call(second, method, `${path}/${first.id}`, payload)
        ])
        const statuses = answers.map((answer) => answer.statusCode)
        t.equal(statuses.filter((status) => status < 300).length, 1, `${method}: one wins (${statuses.join(', ')})`)
        t.ok(statuses.every((status) => [200, 204, 403, 404, 409].includes(status)), 'the other is refused, no error')
        const owners = (await h.snapshot(organization.id)).members.filter((member) => member.role === 'owner')
        t.equal(owners.length, 1, `${method}: one owner is left`)
      }
    })

    t.test('a token selecting one organization gives no power in another', async (t) => {
      const user = await createAccount(app)
      const mine = await h.organization(user, 'Owned')
      const otherOwner = await createAccount(app)
      const other = await h.organization(otherOwner, 'Joined')
      const { token } = await h.invite(otherOwner, other.id, user.email, 'member')
      t.equal((await h.accept(user, token)).statusCode, 200)
      const before = await h.snapshot(other.id)
      const scoped = await h.selected(user, mine.id)
      t.same(orgClaims(scoped.access_token), { org_id: mine.id, org_roles: ['owner'] })
      refused(t, await h.call(scoped.access_token, 'PATCH', `/organizations/${other.id}`, { name: 'Owned now' }), 403, 'FORBIDDEN',
        'Permission denied. Requires: org:update')
      refused(t, await h.call(scoped.access_token, 'DELETE', `/organizations/${other.id}`), 403, 'FORBIDDEN')
      refused(t, await h.call(scoped.access_token, 'PATCH', `/organizations/${other.id}/members/${user.id}`, { role: 'owner' }),
        403, 'FORBIDDEN')
      t.same(await h.snapshot(other.id), before)
    })

    t.test('mass assignment: ids, roles and tokens in bodies are refused (400), nothing stored', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Bodies')
      const member = await h.member(owner, organization.id, 'member')
      const before = await h.snapshot(organization.id)
      const path = `/organizations/${organization.id}`
      const attempts: Array<[Account, Method, string, Record<string, unknown>]> = [
        [member, 'POST', '/organizations', { name: 'x', slug: uniqueSlug(), id: organization.id }],
        [member, 'POST', '/organizations', { name: 'x', slug: uniqueSlug(), role: 'owner', organization_id: organization.id }],
        [owner, 'PATCH', path, { name: 'x', id: organization.id }],
        [owner, 'PATCH', `${path}/members/${member.id}`, { role: 'member', user_id: owner.id }],
        [owner, 'POST', `${path}/invitations`, { email: member.email, role: 'member', organization_id: organization.id }],
        [member, 'POST', '/invitations/accept', { token: 'x', organization_id: organization.id, role: 'owner' }]
      ]
      for (const [caller, method, url, payload] of attempts) {
        refused(t, await h.call(caller, method, url, payload), 400, 'VALIDATION_FAILED')
      }
      t.same(await h.snapshot(organization.id), before)
      const prototype = await app.inject(withToken(member.token, {
        method: 'POST',
        url: '/api/v1/organizations',
        headers: { 'content-type': 'application/json' },
        payload: `{"name":"x","slug":"${uniqueSlug()}","__proto__":{"role":"owner"}}`
      }))
      t.equal(prototype.statusCode, 400, 'a __proto__ key is refused')
    })

    t.test('invitation token reuse: the second accept is 400, by anyone; a member who left cannot come back with it', async (t) => {
      const { owner, organization, invitee, token } = await h.withInvitee('Single use', 'admin')
      const answers = await Promise.all([h.accept(invitee, token), h.accept(invitee, token)])
      const statuses = answers.map((answer) => answer.statusCode).sort()
      // The loser finds the token used (400) or, having read it before the winner committed, a member already (409).
      t.ok(statuses[0] === 200 && [400, 409].includes(statuses[1] ?? 0), `two accepts at once: one wins, one is refused (${statuses.join(', ')})`)
      t.equal((await h.audited('membership.added', organization.id)).length, 1)

      refused(t, await h.accept(invitee, token), 400, 'INVALID_ONE_TIME_TOKEN', 'Invalid, used or expired token')
      t.equal((await h.call(invitee, 'DELETE', `/organizations/${organization.id}/members/${invitee.id}`)).statusCode, 204, 'leaves')
      refused(t, await h.accept(invitee, token), 400, 'INVALID_ONE_TIME_TOKEN')
      const stranger = await createAccount(app)
      refused(t, await h.accept(stranger, token), 400, 'INVALID_ONE_TIME_TOKEN')
      t.same((await h.snapshot(organization.id)).members, [{ user_id: owner.id, role: 'owner' }], 'nobody joined with it')
    })

    t.test('accepting with another address: 403, and the invitation stays usable by the invited address', async (t) => {
      const { owner, organization, invitee, token } = await h.withInvitee('Addressed', 'admin')
      const thief = await createAccount(app)
      for (let attempt = 0; attempt < 3; attempt++) {
        refused(t, await h.accept(thief, token), 403, 'INVITATION_EMAIL_MISMATCH')
      }
      const thiefAdmin = await createAccount(app, { roles: ['admin'] })
      // Not even a global admin takes it.
      refused(t, await h.accept(thiefAdmin, token), 403, 'INVITATION_EMAIL_MISMATCH',
        'This invitation was sent to another address: sign in with the account of the invited address')
      t.same((await h.snapshot(organization.id)).members, [{ user_id: owner.id, role: 'owner' }])
      t.equal((await h.snapshot(organization.id)).open.length, 1, 'the invitation stays')
      const accepted = await h.accept(invitee, token)
      t.equal(accepted.statusCode, 200)
      t.equal(accepted.json().data.role, 'admin')
    })

    t.test('an account registered unverified with the invited address cannot take the invitation (403 EMAIL_NOT_VERIFIED)', async (t) => {
      const { owner, organization, invitee: squatter, token } = await h.withInvitee('Squatted', 'admin', { verified: false })
      refused(t, await h.accept(squatter, token), 403, 'EMAIL_NOT_VERIFIED')
      t.same((await h.snapshot(organization.id)).members, [{ user_id: owner.id, role: 'owner' }])
      t.equal((await h.snapshot(organization.id)).open.length, 1, 'the invitation stays for the address\'s owner')
    })

    t.test('a removed member: the old access token is refused (401); a refresh gives tokens without the organization', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Removal')
      const member = await h.member(owner, organization.id, 'admin')
      const pair = await h.selected(member, organization.id)
      t.same(orgClaims(pair.access_token), { org_id: organization.id, org_roles: ['admin'] })
      t.equal((await h.call(pair.access_token, 'GET', `/organizations/${organization.id}/members`)).statusCode, 200)

      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${member.id}`)).statusCode, 204)
      for (const url of [`/organizations/${organization.id}`, `/organizations/${organization.id}/members`, '/auth/me',
        `/users/${member.id}`, '/users/me']) {
        const answer = await h.call(pair.access_token, 'GET', url)
        t.equal(answer.statusCode, 401, `old token on ${url}`)
        t.equal(answer.json().error.code, 'INVALID_TOKEN')
      }
      const invited = await h.call(pair.access_token, 'POST', `/organizations/${organization.id}/invitations`,
        { email: uniqueEmail('comeback'), role: 'owner' })
      t.equal(invited.statusCode, 401, 'nor does it invite')

      const refreshed = await h.refresh(pair.refresh_token)
      t.equal(refreshed.statusCode, 200, 'the session itself goes on')
      const next = refreshed.json().data
      t.same(orgClaims(next.access_token), { org_id: undefined, org_roles: undefined }, 'no org_id, no org_roles')
      for (const url of [`/organizations/${organization.id}`, `/organizations/${organization.id}/members`]) {
        const answer = await h.call(next.access_token, 'GET', url)
        t.equal(answer.statusCode, 404, url)
        t.same(answer.json(), NOT_FOUND)
      }
      t.equal((await h.call(next.access_token, 'GET', '/auth/me')).statusCode, 200)
      t.equal((await h.call(member, 'GET', `/organizations/${organization.id}`)).statusCode, 404,
        'a token of a session without the organization reads it no more either')

      const { token } = await h.invite(owner, organization.id, member.email, 'member')
      t.equal((await h.accept(next.access_token, token)).statusCode, 200, 'invited back')
      const later = await h.refresh(next.refresh_token)
      t.same(orgClaims(later.json().data.access_token), { org_id: undefined, org_roles: undefined },
        'the session forgot the organization: joining again does not select it')
      const reselect = await h.select(later.json().data.refresh_token, organization.id)
      t.same(orgClaims(reselect.json().data.access_token), { org_id: organization.id, org_roles: ['member'] }, 'until selected again')
    })

    t.test('withdrawing invitations does not reset the limit of 50 per organization per hour: no inbox is flooded', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Flood')
      const path = `/organizations/${organization.id}/invitations`
      const statuses: number[] = []
      for (let n = 0; n < 51; n++) {
        const invited = await h.call(owner, 'POST', path, { email: uniqueEmail('flooded'), role: 'member' })
        statuses.push(invited.statusCode)
        if (invited.statusCode !== 201) break
        const withdrawn = await h.call(owner, 'DELETE', `${path}/${invited.json().data.id}`)
        if (withdrawn.statusCode !== 204) throw new Error(`not withdrawn: ${withdrawn.body}`)
      }
      t.equal(statuses.filter((status) => status === 201).length, 50, 'fifty invitations within the hour')
      t.equal(statuses.at(-1), 429, `the 51st is refused with 429 (answered ${statuses.at(-1)})`)
    })

    t.test('one account floods no inbox through many organizations: 3 invitations a day to one address, withdrawn or not', async (t) => {
      const flooder = await createAccount(app)
      const victim = uniqueEmail('one-inbox')
      const organizations = [await h.organization(flooder, 'First'), await h.organization(flooder, 'Second')]
      const statuses: number[] = []
      for (const organization of [...organizations, ...organizations]) {
        const path = `/organizations/${organization.id}/invitations`
        const invited = await h.call(flooder, 'POST', path, { email: victim, role: 'member' })
        statuses.push(invited.statusCode)
        if (invited.statusCode === 201) await h.call(flooder, 'DELETE', `${path}/${invited.json().data.id as string}`)
      }
      t.same(statuses, [201, 201, 201, 429], 'invite, withdraw, invite again across organizations: the fourth is refused')
      const refusedAgain = await h.call(flooder, 'POST', `/organizations/${organizations[0]?.id ?? ''}/invitations`, { email: victim, role: 'member' })
      t.ok(Number(refusedAgain.headers['retry-after']) > 3600, 'until a day after the first')
      const another = await createAccount(app)
      const theirs = await h.organization(another, 'Someone else\'s')
      t.equal((await h.call(another, 'POST', `/organizations/${theirs.id}/invitations`, { email: victim, role: 'member' })).statusCode, 201,
        'another inviter still reaches the address')
    })

    t.test('an account creates at most 10 organizations a day: none made by the hundred to send invitations from', async (t) => {
      const maker = await createAccount(app)
      const statuses: number[] = []
      for (let n = 0; n < 11; n++) statuses.push((await h.call(maker, 'POST', '/organizations', { name: `Org ${n}`, slug: uniqueSlug() })).statusCode)
      t.same(statuses, [...Array(10).fill(201), 429])
      const count = await app.database.db.selectFrom('organizations').select((eb) => eb.fn.countAll<number | string>().as('count'))
        .where('created_by', '=', maker.id).executeTakeFirstOrThrow()
      t.equal(Number(count.count), 10, 'the eleventh was not made')
    })

    t.test('an invitation grants no more than its inviter holds when it is accepted: demoted or removed, theirs is refused and closed', async (t) => {
      for (const loss of ['demoted', 'removed'] as const) {
        const { owner, organization, admin } = await h.team(`Lost rank (${loss})`)
        const second = await createAccount(app)
        const { invitation, token } = await h.invite(admin, organization.id, second.email, 'admin')
        const listed = await h.call(owner, 'GET', `/organizations/${organization.id}/invitations`)
        t.match(listed.json().data, [{ id: invitation.id, invited_by: admin.id, role: 'admin' }], 'the owner sees who invited whom')
        const change = loss === 'demoted'
          ? await h.call(owner, 'PATCH', `/organizations/${organization.id}/members/${admin.id}`, { role: 'member' })
          : await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${admin.id}`)
        t.ok(change.statusCode < 300, `the inviter ${loss}`)
        refused(t, await h.accept(second, token), 409, 'CONFLICT')
        const { members, open } = await h.snapshot(organization.id)
        t.notOk(members.some((member) => member.user_id === second.id), `${loss}: no way back in above the inviter's rank`)
        t.notOk(open.some((pending) => pending.id === invitation.id), 'the invitation is closed')
      }
      const { owner, organization, admin } = await h.team('Kept rank')
      const kept = await createAccount(app)
      const { token } = await h.invite(admin, organization.id, kept.email, 'member')
      await h.call(owner, 'PATCH', `/organizations/${organization.id}/members/${admin.id}`, { role: 'member' })
      t.equal((await h.accept(kept, token)).statusCode, 200, 'an invitation to a rank the inviter still holds stays good')
    })

    t.test('a taken slug is public, as a GitHub organization\'s name is: 409 to anyone, and nothing else of the organization', async (t) => {
      const { victim, attacker } = await h.victimAndAttacker()
      const taken = await h.call(attacker, 'POST', '/organizations', { name: 'Squatter', slug: victim.slug })
      refused(t, taken, 409, 'CONFLICT', 'Slug already taken')
      t.notMatch(taken.body, victim.id, 'not its id')
      t.notMatch(taken.body, 'Victim', 'nor its name')
      t.same((await h.call(attacker, 'GET', `/organizations/${victim.id}`)).json(), NOT_FOUND, 'and it stays hidden from the outsider')
    })

    t.test('a removed member\'s token that named the organization before the session switched away is refused too', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Left behind')
      const member = await h.member(owner, organization.id, 'admin')
      const elsewhere = await h.organization(member, 'Elsewhere')
      const named = await h.selected(member, organization.id)
      const switched = await h.select(named.refresh_token, elsewhere.id)
      t.equal(switched.statusCode, 200)
      t.same(orgClaims(switched.json().data.access_token), { org_id: elsewhere.id, org_roles: ['owner'] })
      t.same(orgClaims(named.access_token), { org_id: organization.id, org_roles: ['admin'] }, 'still names the first, for 15 minutes')

      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${member.id}`)).statusCode, 204)
      // A resource server trusting org_id and org_roles would take it for an admin of the organization till it expires.
      refused(t, await h.call(named.access_token, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
      t.equal((await h.call(switched.json().data.access_token, 'GET', `/organizations/${elsewhere.id}`)).statusCode, 200,
        'the token naming the other organization keeps working')
      const refreshed = await h.refresh(switched.json().data.refresh_token)
      t.same(orgClaims(refreshed.json().data.access_token), { org_id: elsewhere.id, org_roles: ['owner'] }, 'and so does its session')
    })

    t.test('a removed member retrying a refresh spent before the removal gets nothing that speaks for the organization', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Retry')
      const member = await h.member(owner, organization.id, 'admin')
      const selected = await h.selected(member, organization.id)
      const rotated = await h.refresh(selected.refresh_token)
      t.equal(rotated.statusCode, 200)
      t.same(orgClaims(rotated.json().data.access_token), { org_id: organization.id, org_roles: ['admin'] })

      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${member.id}`)).statusCode, 204)
      // Within REFRESH_RETRY_WINDOW_S the spent token answers the pair it was rotated into: that pair must be dead.
      const retried = await h.refresh(selected.refresh_token)
      if (retried.statusCode === 200) {
        const kept = retried.json().data
        refused(t, await h.call(kept.access_token, 'GET', `/organizations/${organization.id}/members`), 401, 'INVALID_TOKEN')
        const next = await h.refresh(kept.refresh_token)
        t.equal(next.statusCode, 200)
        t.same(orgClaims(next.json().data.access_token), { org_id: undefined, org_roles: undefined })
      } else {
        t.equal(retried.statusCode, 401, 'or the retry is refused')
      }
      refused(t, await h.call(rotated.json().data.access_token, 'POST', `/organizations/${organization.id}/invitations`,
        { email: uniqueEmail('retry'), role: 'admin' }), 401, 'INVALID_TOKEN')
      t.same((await h.snapshot(organization.id)).open, [])
    })

    t.test('an address changed to the invited one, not proved yet, takes no invitation (403 EMAIL_NOT_VERIFIED)', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Changed address')
      const invited = uniqueEmail('not-yet-registered')
      const { token } = await h.invite(owner, organization.id, invited, 'admin')
      const attacker = await createAccount(app)
      const changed = await h.call(attacker, 'PATCH', `/users/${attacker.id}`, { email: invited })
      t.equal(changed.statusCode, 200, changed.body)
      t.equal(changed.json().data.email_verified, false)
      refused(t, await h.accept(attacker, token), 403, 'EMAIL_NOT_VERIFIED')
      t.same((await h.snapshot(organization.id)).members, [{ user_id: owner.id, role: 'owner' }])
      t.equal((await h.snapshot(organization.id)).open.length, 1, 'the invitation stays')
    })

    t.test('an organization\'s name puts no header or markup into the invitation mail', async (t) => {
      const owner = await createAccount(app)
      const bcc = uniqueEmail('bcc')
      const names = [`Evil\r\nBcc: ${bcc}\r\nX-Injected: yes`, 'Evil <script>alert(1)</script> & "quotes"']
      for (const name of names) {
        const created = await h.call(owner, 'POST', '/organizations', { name, slug: uniqueSlug() })
        if (created.statusCode === 400) {
          // Refusing line breaks in a name is as good as keeping them out of the headers.
          t.ok(/[\r\n]/.test(name), `refused: ${JSON.stringify(name)}`)
          continue
        }
        t.equal(created.statusCode, 201)
        const invitee = await createAccount(app)
        const { mail } = await h.invite(owner, created.json().data.id, invitee.email, 'member')
        t.same(mail.to, [invitee.email], 'sent to the invitee alone')
        t.notMatch(mail.subject, /[\r\n]/, 'one subject line')
        t.notMatch(mail.subject, 'Evil', 'the name is not in the subject at all')
        t.notMatch(mail.html, '<script>', 'the name is escaped in the HTML')
      }
      t.equal(h.smtp.received.filter((message) => message.to.includes(bcc)).length, 0, 'nobody else was sent anything')
    })

    t.test('an organization named like a phishing message: the mail quotes the name as inert data, never as a link or in the subject', async (t) => {
      const owner = await createAccount(app)
      const name = 'Your account is locked - restore it at https://evil.example/login'
      const organization = await h.organization(owner, name)
      const invitee = await createAccount(app)
      const { mail } = await h.invite(owner, organization.id, invitee.email, 'member')
      t.equal(mail.subject, 'An invitation to an organization on Users API', 'the subject is the service\'s words alone')
      t.notMatch(mail.text, 'https://evil.example', 'no address a mail client would make a link of, in the text')
      t.notMatch(mail.html, 'https://evil.example', 'nor in the HTML')
      t.notMatch(mail.html, /href="[^"]*evil/, 'no link to it')
      t.match(mail.text.replaceAll('\u200b', ''), `“${name}”`, 'the name, quoted, readable')
    })

    t.test('a deleted organization: its members\' selected tokens are refused (401); a refresh carries no organization', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Doomed')
      const member = await h.member(owner, organization.id, 'member')
      const memberPair = await h.selected(member, organization.id)
      const ownerPair = await h.selected(owner, organization.id)
      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}`)).statusCode, 204)
      for (const pair of [memberPair, ownerPair]) {
        refused(t, await h.call(pair.access_token, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
        const refreshed = await h.refresh(pair.refresh_token)
        t.equal(refreshed.statusCode, 200)
        t.same(orgClaims(refreshed.json().data.access_token), { org_id: undefined, org_roles: undefined })
      }
    })

    t.test('a demoted admin: the old token is refused (401); the refresh carries org_roles [\'member\'] and invites nobody', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Demotion')
      const admin = await h.member(owner, organization.id, 'admin')
      const pair = await h.selected(admin, organization.id)
      t.same(orgClaims(pair.access_token).org_roles, ['admin'])

      const demoted = await h.call(owner, 'PATCH', `/organizations/${organization.id}/members/${admin.id}`, { role: 'member' })
      t.equal(demoted.statusCode, 200)
      refused(t, await h.call(pair.access_token, 'GET', '/auth/me'), 401, 'INVALID_TOKEN')
      const email = uniqueEmail('after-demotion')
      refused(t, await h.call(pair.access_token, 'POST', `/organizations/${organization.id}/invitations`, { email, role: 'member' }),
        401, 'INVALID_TOKEN')

      const refreshed = await h.refresh(pair.refresh_token)
      t.equal(refreshed.statusCode, 200)
      const next = refreshed.json().data
      t.same(orgClaims(next.access_token), { org_id: organization.id, org_roles: ['member'] })
      refused(t, await h.call(next.access_token, 'POST', `/organizations/${organization.id}/invitations`, { email, role: 'member' }),
        403, 'FORBIDDEN', 'Permission denied. Requires: members:invite')
      // A token of a session without the organization selected was not revoked: the role is read afresh.
      refused(t, await h.call(admin, 'POST', `/organizations/${organization.id}/invitations`, { email, role: 'member' }),
        403, 'FORBIDDEN', 'Permission denied. Requires: members:invite')
      refused(t, await h.call(admin, 'DELETE', `/organizations/${organization.id}/members/${owner.id}`), 403, 'FORBIDDEN')
      t.same((await h.snapshot(organization.id)).open, [], 'nobody invited')
    })

    t.test('a demotion racing a refresh: the pair answered carries the new role, or its access token is refused', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Racing')
      for (let round = 0; round < 6; round++) {
        const admin = await h.member(owner, organization.id, 'admin')
        const pair = await h.selected(admin, organization.id)
        const [refreshed, demoted] = await Promise.all([
          h.refresh(pair.refresh_token),
          h.call(owner, 'PATCH', `/organizations/${organization.id}/members/${admin.id}`, { role: 'member' })
        ])
        t.equal(demoted.statusCode, 200)
        t.equal(refreshed.statusCode, 200)
        const next = refreshed.json().data
        const roles = orgClaims(next.access_token).org_roles
        const me = await h.call(next.access_token, 'GET', '/auth/me')
        t.ok(JSON.stringify(roles) === '["member"]' ? me.statusCode === 200 : me.statusCode === 401,
          `round ${round}: ${JSON.stringify(roles)} and ${me.statusCode}: no live token of the old role`)
      }
    })

    t.test('/auth/organization: a non-member selects nothing (404), whatever their global role', async (t) => {
      const owner = await createAccount(app)
      const organization = await h.organization(owner, 'Selective')
      const outsider = await createAccount(app)
      const globalAdmin = await createAccount(app, { roles: ['admin'] })
      const superAdmin = await createAccount(app, { roles: ['super_admin'] })
      const removed = await h.member(owner, organization.id, 'member')
      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${removed.id}`)).statusCode, 204)

      for (const account of [outsider, globalAdmin, superAdmin, removed]) {
        const session = await h.signIn(account)
        const answer = await h.select(session.refresh_token, organization.id)
        t.equal(answer.statusCode, 404)
        t.same(answer.json(), NOT_FOUND)
        const refreshed = await h.refresh(session.refresh_token)
        t.equal(refreshed.statusCode, 200, 'the refresh token was not spent by the refusal')
        t.same(orgClaims(refreshed.json().data.access_token), { org_id: undefined, org_roles: undefined }, 'nothing selected')
      }
      t.same(await h.audited('auth.organization_selected', organization.id).then((rows) => rows.filter((row) => row.outcome === 'success')),
        [], 'no selection recorded as a success')

      const ownerPair = await h.selected(owner, organization.id)
      refused(t, await h.select(ownerPair.access_token, organization.id), 401, 'INVALID_TOKEN')
      t.same(orgClaims(ownerPair.access_token), { org_id: organization.id, org_roles: ['owner'] }, 'the owner does select it')
    })
  })
}
