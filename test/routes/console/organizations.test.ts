import t from 'tap'
import { createAccount, type Account } from '../../helpers/accounts.js'
import type { CookieBrowser } from '../../helpers/authorization-server.js'
import { startAuthorizationServer } from '../../helpers/authorization-server.js'
import { pageToken, signedInBrowser } from '../../helpers/console.js'
import { backends, suiteName } from '../../helpers/database.js'
import { APP_URL, OrganizationHarness } from '../../helpers/organizations.js'
import { MailServer } from '../../helpers/servers/mail-server.js'

/** The console's organizations: the list, an organization's members and invitations, their forms (docs/console.md). */

const EVIL_NAME = '<script>alert(1)</script>Acme'

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const smtp = await new MailServer().start()
    t.teardown(async () => { await smtp.stop() })
    const server = await startAuthorizationServer(t, backend.url, { SMTP_URL: smtp.url(), APP_URL })
    const { app, issuer, admin: superAdmin } = server
    const harness = new OrganizationHarness(app, smtp)

    const signedIn = async (account: Account) => (await signedInBrowser(issuer, account)).browser
    async function page (browser: CookieBrowser, url: string) {
      const { response } = await browser.follow(url)
      return { status: response.status, html: await response.text() }
    }
    async function membersOf (organizationId: string, owner: Account) {
      const listed = await harness.call(owner, 'GET', `/organizations/${organizationId}/members`)
      return (listed.json().data as Array<{ id: string, role: string }>).map(({ id, role }) => ({ id, role }))
    }

    t.test('an organization\'s admin changes a role, removes a member, invites and withdraws from its page; names shown as text', async (t) => {
      const { owner, organization, admin, member } = await harness.team(EVIL_NAME)
      const browser = await signedIn(admin)
      const { status, html } = await page(browser, `/console/organizations/${organization.id}`)
      t.equal(status, 200)
      t.notMatch(html, '<script>alert', 'no script from the organization\'s name')
      t.match(html, '&lt;script&gt;alert(1)&lt;/script&gt;Acme')
      t.match(html, '<dt>Your role</dt><dd>admin</dd>')

      const changed = await browser.follow(`/console/organizations/${organization.id}/members/${member.id}/role`, { form: { _csrf: pageToken(html), role: 'admin' } })
      t.match(await changed.response.text(), 'The member&#39;s role is changed.')
      t.match(await membersOf(organization.id, owner), [{ id: owner.id, role: 'owner' }, { id: admin.id, role: 'admin' }, { id: member.id, role: 'admin' }])
      const above = await browser.request(`/console/organizations/${organization.id}/members/${owner.id}/role`, { form: { _csrf: pageToken(html), role: 'member' } })
      t.equal(above.status, 403, 'not the owner\'s: the API\'s ranks')

      const removed = await browser.follow(`/console/organizations/${organization.id}/members/${member.id}/remove`, { form: { _csrf: pageToken(html) } })
      t.match(await removed.response.text(), 'The member is removed.')
      t.equal((await membersOf(organization.id, owner)).length, 2)

      const invited = await browser.follow(`/console/organizations/${organization.id}/invitations`, { form: { _csrf: pageToken(html), email: 'new.person@example.com', role: 'member' } })
      const invitedHtml = await invited.response.text()
      t.match(invitedHtml, 'The invitation is sent.')
      t.match(await harness.invitationMail('new.person@example.com'), { subject: /invit/i }, 'the invitation goes out')
      const invitationId = /\/invitations\/([0-9a-f-]+)\/withdraw/.exec(invitedHtml)?.[1] ?? ''
      const withdrawn = await browser.follow(`/console/organizations/${organization.id}/invitations/${invitationId}/withdraw`, { form: { _csrf: pageToken(invitedHtml) } })
      t.match(await withdrawn.response.text(), 'No pending invitation.')
    })

    t.test('a member reads; a global admin reads every organization without forms; a moderator sees only their own', async (t) => {
      const { organization, member } = await harness.team('Readers Inc')
      const memberBrowser = await signedIn(member)
      const memberPage = await page(memberBrowser, `/console/organizations/${organization.id}`)
      t.equal(memberPage.status, 200)
      t.notMatch(memberPage.html, '<form method="post" action="/console/organizations/', 'no form for a plain member')
      t.notMatch(memberPage.html, 'Pending invitations', 'nor the invitations, which need members:invite')
      const refused = await memberBrowser.request(`/console/organizations/${organization.id}/invitations`, { form: { _csrf: pageToken(memberPage.html), email: 'x@example.com', role: 'member' } })
      t.equal(refused.status, 403, 'the invite form\'s route refuses them as the API does')

      const admin = await createAccount(app, { roles: ['admin'] })
      const adminBrowser = await signedIn(admin)
      const list = await page(adminBrowser, `/console/organizations?search=${encodeURIComponent('Readers Inc')}`)
      t.match(list.html, `/console/organizations/${organization.id}`, 'the list holds every organization for a global admin')
      t.match(list.html, '<td>not a member</td>')
      const read = await page(adminBrowser, `/console/organizations/${organization.id}`)
      t.equal(read.status, 200)
      t.match(read.html, 'Test User')
      t.notMatch(read.html, '<form method="post" action="/console/organizations/', 'read-only')

      const moderator = await createAccount(app, { roles: ['moderator'] })
      const moderatorBrowser = await signedIn(moderator)
      t.match((await page(moderatorBrowser, '/console/organizations')).html, 'No organization.')
      t.equal((await page(moderatorBrowser, `/console/organizations/${organization.id}`)).status, 404, 'another organization is not found')
    })

    t.test('a super_admin acts as an owner, audited; the forms refuse a missing or wrong token', async (t) => {
      const { owner, organization, member } = await harness.team('Audited Ltd')
      const browser = await signedIn(superAdmin)
      const { html } = await page(browser, `/console/organizations/${organization.id}`)
      t.match(html, '<dt>Your role</dt><dd>not a member</dd>')
      t.match(html, 'Remove Test User from the organization')
      for (const form of [{}, { _csrf: 'forged' }] as Array<Record<string, string>>) {
        const answer = await browser.request(`/console/organizations/${organization.id}/members/${member.id}/remove`, { form })
        t.equal(answer.status, 403, `${JSON.stringify(form)}: refused`)
      }
      t.equal((await membersOf(organization.id, owner)).length, 3, 'nobody removed')
      t.ok((await harness.audited('organization.accessed_as_super_admin', organization.id)).length > 0, 'the super_admin\'s look is audited')
    })
  })
}
