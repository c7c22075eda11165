import t from 'tap'
import { createAccount } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail, OrganizationHarness } from '../../helpers/organizations.js'
import { readsOf, StatementLog } from '../../helpers/statements.js'

/**
 * One read per fact (docs/architecture.md, "Access"): the organization guard reads the caller's
 * membership once and the services act on what it read; a member changed is read once, in the
 * change's transaction; a refresh of a session with an organization reads the membership once,
 * in the rotation's transaction. Counted in the statements the database ran.
 */
for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const log = new StatementLog()
    const { app, smtp } = await appWithMail(t, backend.url, { onStatement: log.onStatement })
    const h = new OrganizationHarness(app, smtp)
    const membershipReads = async (action: () => Promise<{ statusCode: number, body: string }>, status: number) => {
      let answer: { statusCode: number, body: string } | undefined
      const statements = await log.during(async () => { answer = await action() })
      t.equal(answer?.statusCode, status, answer?.body ?? 'no answer')
      return readsOf(statements, 'organization_members')
    }

    t.test('a member update and a removal: the caller\'s standing once, before; the member once, in the change', async (t) => {
      const { owner, organization, admin, member } = await h.team('Reads')
      const updated = await membershipReads(async () =>
        await h.call(admin, 'PATCH', `/organizations/${organization.id}/members/${member.id}`, { role: 'admin' }), 200)
      t.same(updated.map((read) => read.inTransaction), [false, true], 'the guard\'s read, then the member\'s in the change')
      const removed = await membershipReads(async () =>
        await h.call(owner, 'DELETE', `/organizations/${organization.id}/members/${member.id}`), 204)
      t.same(removed.map((read) => read.inTransaction), [false, true])
      const refused = await membershipReads(async () =>
        await h.call(admin, 'PATCH', `/organizations/${organization.id}/members/${owner.id}`, { role: 'member' }), 403)
      t.same(refused.map((read) => read.inTransaction), [false, true], 'a refusal by rank reads no more')
    })

    t.test('an invitation: the caller\'s standing once; the invitee\'s membership once, in the invitation\'s transaction', async (t) => {
      const { organization, admin } = await h.team('Invites')
      const invitee = await createAccount(app)
      const reads = await membershipReads(async () =>
        await h.call(admin, 'POST', `/organizations/${organization.id}/invitations`, { email: invitee.email, role: 'member' }), 201)
      t.same(reads.map((read) => read.inTransaction), [false, true])
    })

    t.test('a refresh of a session with an organization reads the membership once, in the rotation', async (t) => {
      const { organization, member } = await h.team('Refreshes')
      const selecting = (await h.signIn(member)).refresh_token
      const selected = await membershipReads(async () => await h.select(selecting, organization.id), 200)
      t.same(selected.map((read) => read.inTransaction), [true], 'selecting reads it once, in the rotation')
      const pair = (await h.select((await h.signIn(member)).refresh_token, organization.id)).json().data
      const refreshed = await membershipReads(async () => await h.refresh(pair.refresh_token), 200)
      t.same(refreshed.map((read) => read.inTransaction), [true])
      const plain = await membershipReads(async () => await h.refresh((await h.signIn(member)).refresh_token), 200)
      t.same(plain, [], 'a session without one reads none')
    })
  })
}
