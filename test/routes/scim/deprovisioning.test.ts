import t from 'tap'
import { SCIM } from '../../../schemas/scim.js'
import { withToken } from '../../helpers/accounts.js'
import { build, redisReady } from '../../helpers/app.js'
import { msUntil } from '../../helpers/clock.js'
import { backends, freshDatabaseUrl, REDIS_ENV, suiteName } from '../../helpers/database.js'
import { APP_URL } from '../../helpers/organizations.js'
import { mailServer } from '../../helpers/servers/mail-server.js'
import { patchOp, ScimHarness } from '../../helpers/scim.js'

/**
 * Deprovisioning (docs/api.md, "SCIM provisioning"): a person the directory deactivates loses
 * the organization at once, on every instance, and gets back in through none of its doors.
 */

for (const backend of backends()) {
  t.test(`deprovisioning (${suiteName(backend)})`, async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const smtp = await mailServer(t)
    const env = { SMTP_URL: smtp.url(), APP_URL, ...REDIS_ENV }
    const first = await build(t, { databaseUrl, env })
    const second = await build(t, { databaseUrl, env })
    await redisReady(first, second)
    const harness = new ScimHarness(first, smtp)
    const other = new ScimHarness(second, smtp)

    t.test('a deactivated person\'s tokens for the organization are refused by another instance within a second', async (t) => {
      const { organization, directory, domain } = await harness.provisioned()
      const person = await harness.accountAt(ScimHarness.address(domain))
      const user = (await harness.scim(directory, 'POST', '/Users', { schemas: [SCIM.user], userName: person.email })).json()
      t.equal(await harness.roleOf(organization.id, person.id), 'member', 'an account that existed joins')
      const pair = await other.selected(person, organization.id)
      const me = () => second.inject(withToken(pair.access_token, { method: 'GET', url: '/api/v1/auth/me' }))
      t.equal((await me()).statusCode, 200)
      const unscoped = (await other.signIn(person)).access_token

      const deactivated = await harness.scim(directory, 'PATCH', `/Users/${user.id}`, patchOp({ op: 'replace', path: 'active', value: false }))
      t.equal(deactivated.statusCode, 200)
      const elapsed = await msUntil(async () => (await me()).statusCode === 401, 2000)
      t.ok(elapsed <= 1000, `the organization's access token refused by the other instance after ${elapsed} ms`)
      const refreshed = await other.select(pair.refresh_token, organization.id)
      t.equal(refreshed.statusCode, 404, 'its session cannot select the organization again')
      t.equal((await second.inject(withToken(unscoped, { method: 'GET', url: '/api/v1/auth/me' }))).statusCode, 200,
        'the account itself stays signed in: only the organization is gone')
    })

    t.test('a member added while the group is deleted keeps no role from it, whichever instance does which', async (t) => {
      const { organization, directory, domain } = await harness.provisioned({ 'Acme Admins': 'admin' })
      for (let round = 0; round < 5; round++) {
        const [admin, joiner] = await Promise.all([0, 1].map(async () => (await harness.scim(directory, 'POST', '/Users', {
          schemas: [SCIM.user], userName: ScimHarness.address(domain)
        })).json()))
        const group = (await harness.scim(directory, 'POST', '/Groups', {
          schemas: [SCIM.group], displayName: 'Acme Admins', members: [{ value: admin.id }]
        })).json()
        const [added, deleted] = await Promise.all([
          other.scim(directory, 'PATCH', `/Groups/${group.id}`, patchOp({ op: 'add', path: 'members', value: [{ value: joiner.id }] })),
          harness.scim(directory, 'DELETE', `/Groups/${group.id}`)
        ])
        t.equal(deleted.statusCode, 204)
        t.ok([200, 404].includes(added.statusCode), `the addition applied before the deletion, or found no group (${added.statusCode})`)
        const account = await first.repositories.users.findByEmail(joiner.userName)
        t.equal(await harness.roleOf(organization.id, account?.id ?? ''), 'member', `round ${round}: the joiner holds no role of a deleted group`)
      }
    })
  })
}
