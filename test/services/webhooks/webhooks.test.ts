import diagnosticsChannel from 'node:diagnostics_channel'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import t, { type Test } from 'tap'
import type { WebhookEventType } from '../../../schemas/webhooks.js'
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS } from '../../../src/services/webhooks/dispatcher.js'
import type { Resolver } from '../../../src/security/outbound-http.js'
import { PREVIOUS_SECRET_TTL_MS } from '../../../src/services/webhooks/service.js'
import { TEST_PASSWORD, uniqueEmail } from '../../helpers/accounts.js'
import { backends, refuseWrites } from '../../helpers/database.js'
import { signingKeyPair } from '../../helpers/servers/saml-identity-provider.js'
import { type ReceivedDelivery, webhookReceiver } from '../../helpers/servers/webhook-receiver.js'
import { actingAs, buildServices, contextFrom, owner, registered, type ServiceFixture } from '../../helpers/services.js'

/** The headers a receiver verifies, as the standardwebhooks package reads them. */
function signed (delivery: ReceivedDelivery): Record<string, string> {
  return {
    'webhook-id': String(delivery.headers['webhook-id']),
    'webhook-timestamp': String(delivery.headers['webhook-timestamp']),
    'webhook-signature': String(delivery.headers['webhook-signature'])
  }
}

/** The services (loopback allowed, for the receiver), a receiver, a super_admin, and an endpoint for `events`. */
async function withEndpoint (
  t: Test, url: string | null, events: WebhookEventType[], env: Record<string, string> = {}, resolve?: Resolver
) {
  const fixture = await buildServices(t, url, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8', ...env }, { resolve })
  const receiver = await webhookReceiver(t)
  const admin = await owner(fixture, ['super_admin'])
  const endpoint = await fixture.services.webhooks.create(actingAs(admin), { url: receiver.url, events })
  return { fixture, receiver, admin, endpoint }
}

/** A delivery round, as the background job runs one (the kick after a change may have begun it). */
async function round ({ services }: ServiceFixture) {
  await services.webhookDispatcher.round()
}

async function deliveriesOf ({ database }: ServiceFixture, endpointId: string) {
  return await database.db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId).orderBy('created_at').orderBy('id').execute()
}

async function register (fixture: ServiceFixture) {
  return await fixture.services.accounts.register(contextFrom('192.0.2.7'), { email: uniqueEmail('hooked'), name: 'Hooked', password: TEST_PASSWORD })
}

for (const backend of backends()) {
  t.test(`webhooks (${backend.name})`, async (t) => {
    t.test('an endpoint\'s secret is shown once, stored sealed, and its creation audited', async (t) => {
      const { fixture, endpoint, admin } = await withEndpoint(t, backend.url, ['user.created'])
      t.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'a Standard Webhooks secret of 32 bytes')
      t.notOk('secret' in await fixture.services.webhooks.get(endpoint.id), 'reading the endpoint never shows it')
      const row = await fixture.database.db.selectFrom('webhook_endpoints').select('secret').where('id', '=', endpoint.id).executeTakeFirstOrThrow()
      t.notOk(row.secret.includes(endpoint.secret.slice('whsec_'.length)), 'the stored secret is sealed')
      t.match(await fixture.audited('webhook.created'), [{ actor_id: admin.id, details: { webhook_id: endpoint.id, events: ['user.created'] } }])
    })

    t.test('a receiver\'s credential in its URL reaches neither the audit log nor a delivery: the entry holds the origin only', async (t) => {
      const { fixture, receiver, admin } = await withEndpoint(t, backend.url, ['user.created'])
      const credential = 'T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX'
      const url = `${new URL(receiver.url).origin}/services/${credential}?token=s3cret-query-token`
      const created = await fixture.services.webhooks.create(actingAs(admin), { url, events: ['audit.entry'] })
      const entry = (await fixture.audited('webhook.created')).find((row) => row.details.webhook_id === created.id)
      t.same(entry?.details, { webhook_id: created.id, origin: new URL(url).origin, events: ['audit.entry'] })
      const everything = JSON.stringify(await fixture.database.db.selectFrom('audit_logs').selectAll().execute())
      t.notMatch(everything, credential, 'the path\'s credential is in no entry')
      t.notMatch(everything, 's3cret-query-token', 'nor the query\'s')
    })

    t.test('an unclaimed account creates no endpoint, whatever its role', async (t) => {
      const fixture = await buildServices(t, backend.url, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' })
      const unclaimed = await registered(fixture, ['super_admin'])
      await t.rejects(fixture.services.webhooks.create(actingAs(unclaimed), { url: 'http://127.0.0.1:1/hooks', events: ['user.created'] }), { code: 'EMAIL_NOT_VERIFIED' })
      t.same(await fixture.database.db.selectFrom('webhook_endpoints').select('id').execute(), [])
    })

    t.test('a change is delivered signed, to the endpoints subscribed to its event only', async (t) => {
      const { fixture, receiver, endpoint, admin } = await withEndpoint(t, backend.url, ['user.created'])
      const elsewhere = await fixture.services.webhooks.create(actingAs(admin), { url: `${receiver.url}/sessions`, events: ['session.created'] })
      const user = await register(fixture)
      await round(fixture)
      const mine = receiver.received.filter((delivery) => delivery.path === '/hooks')
      t.equal(mine.length, 1, 'one delivery of user.created')
      const [delivery] = mine
      if (delivery === undefined) return
      t.same(new StandardWebhook(endpoint.secret).verify(delivery.body, signed(delivery)), delivery.payload, 'the signature verifies as a receiver checks it')
      t.match(delivery.payload, { type: 'user.created', data: { user_id: user.id, provider: null } })
      t.equal(delivery.headers['content-type'], 'application/json')
      t.notOk(delivery.body.includes(TEST_PASSWORD) || delivery.body.includes('password_hash'), 'no secret in the payload')
      t.same(receiver.received.filter((received) => received.path === '/hooks/sessions'), [], 'an endpoint not subscribed to user.created gets nothing')
      t.match(await deliveriesOf(fixture, endpoint.id), [{ id: delivery.headers['webhook-id'], status: 'succeeded', attempts: 1, last_status: 200, next_attempt_at: null }])
      t.same(await deliveriesOf(fixture, elsewhere.id), [])
    })

    t.test('a failed try is retried on the schedule, under the same webhook-id, until a 2xx', async (t) => {
      const { fixture, receiver, endpoint } = await withEndpoint(t, backend.url, ['user.created'])
      receiver.answers.push(500, 503)
      await register(fixture)
      await round(fixture)
      let [row] = await deliveriesOf(fixture, endpoint.id)
      t.match(row, { status: 'pending', attempts: 1, last_status: 500, last_error: 'answered 500' })
      const wait = Date.parse(String(row?.next_attempt_at)) - Date.now()
      t.ok(wait > RETRY_SCHEDULE_MS[0]! - 2000 && wait <= RETRY_SCHEDULE_MS[0]!, `the first retry waits ${RETRY_SCHEDULE_MS[0]} ms`)
      await round(fixture)
      t.equal(receiver.received.length, 1, 'nothing is sent before the retry is due')
      fixture.clock.aheadMs += RETRY_SCHEDULE_MS[0]!
      await round(fixture)
      fixture.clock.aheadMs += RETRY_SCHEDULE_MS[1]!
      await round(fixture)
      ;[row] = await deliveriesOf(fixture, endpoint.id)
      t.match(row, { status: 'succeeded', attempts: 3, last_status: 200, last_error: null, next_attempt_at: null })
      t.same(receiver.received.map((delivery) => delivery.headers['webhook-id']), [row?.id, row?.id, row?.id], 'every try carries the delivery\'s id')
    })

    t.test('a receiver that does not answer in time counts as a failure', async (t) => {
      const { fixture, receiver, endpoint } = await withEndpoint(t, backend.url, ['user.created'], { WEBHOOK_TIMEOUT_MS: '300' })
      receiver.answers.push('hang')
      await register(fixture)
      await round(fixture)
      t.match(await deliveriesOf(fixture, endpoint.id), [{ status: 'pending', attempts: 1, last_status: null, last_error: /within 300 ms/ }])
    })

    t.test('a redirect is not followed: it is a failure', async (t) => {
      const { fixture, receiver, endpoint } = await withEndpoint(t, backend.url, ['user.created'])
      receiver.answers.push(302)
      await register(fixture)
      await round(fixture)
      t.equal(receiver.received.length, 1, 'one request, to the endpoint only')
      t.match(await deliveriesOf(fixture, endpoint.id), [{ status: 'pending', last_status: 302, last_error: /redirects are not followed/ }])
    })

    t.test('a delivery failing to the last try is given up, and the endpoint disabled, audited, and its creator told', async (t) => {
      const { fixture, receiver, endpoint, admin } = await withEndpoint(t, backend.url, ['user.created'])
      receiver.answers.push(...Array<number>(2 * MAX_ATTEMPTS).fill(500))
      const first = await register(fixture)
      await round(fixture)
      // A second delivery, one try behind the first all along: still pending when the first is given up.
      fixture.clock.aheadMs += RETRY_SCHEDULE_MS[0]!
      const second = await register(fixture)
      for (const wait of RETRY_SCHEDULE_MS.slice(1)) {
        await round(fixture)
        fixture.clock.aheadMs += wait
      }
      await round(fixture)
      t.equal(receiver.received.length, 2 * MAX_ATTEMPTS - 1, `${MAX_ATTEMPTS} tries of the first, one fewer of the second`)
      const rows = await deliveriesOf(fixture, endpoint.id)
      const byUser = (id: string) => rows.find((row) => JSON.parse(row.payload).data.user_id === id)
      t.match(byUser(first.id), { status: 'failed', attempts: MAX_ATTEMPTS, next_attempt_at: null })
      t.match(byUser(second.id), { status: 'pending', attempts: MAX_ATTEMPTS - 1 })
      t.match(await fixture.services.webhooks.get(endpoint.id), { enabled: false, disabled_reason: 'failing' })
      t.match(await fixture.audited('webhook.disabled'), [{ actor_id: null, details: { webhook_id: endpoint.id, reason: 'failing' } }])
      await fixture.delivered()
      t.match(fixture.sent.filter((mail) => mail.to === admin.email && /webhook/.test(mail.subject)), [{
        subject: 'A webhook endpoint you created was disabled: its deliveries kept failing for a day',
        text: `The endpoint is ${endpoint.id}, at ${new URL(endpoint.url).origin}.`
      }])
      t.notOk(fixture.sent.some((mail) => mail.text.includes(endpoint.url)), 'the mail carries the origin, not the path (it may hold a secret)')

      // A change made while it is disabled is not sent to it; enabling it sends what was pending.
      await register(fixture)
      await round(fixture)
      t.equal(receiver.received.length, 2 * MAX_ATTEMPTS - 1, 'nothing is sent to a disabled endpoint')
      receiver.answers.length = 0
      await fixture.services.webhooks.update(actingAs(admin), endpoint.id, { enabled: true })
      await round(fixture)
      t.equal(receiver.received.length, 2 * MAX_ATTEMPTS, 'enabling it sends the pending delivery, and only that')
      t.equal(receiver.received.at(-1)?.payload.data.user_id, second.id)
      t.match(byUser(second.id) === undefined ? undefined : (await deliveriesOf(fixture, endpoint.id)).find((row) => row.id === byUser(second.id)?.id), { status: 'succeeded', attempts: MAX_ATTEMPTS })
    })

    t.test('an endpoint that answered since the delivery was made stays enabled when it is given up', async (t) => {
      const { fixture, receiver, endpoint } = await withEndpoint(t, backend.url, ['user.created'])
      receiver.answers.push(500)
      await register(fixture)
      await round(fixture)
      receiver.answers.push(200)
      await register(fixture)
      await round(fixture)
      receiver.answers.push(...Array<number>(MAX_ATTEMPTS).fill(500))
      for (const wait of RETRY_SCHEDULE_MS) {
        fixture.clock.aheadMs += wait
        await round(fixture)
      }
      const statuses = (await deliveriesOf(fixture, endpoint.id)).map((row) => row.status).sort()
      t.same(statuses, ['failed', 'succeeded'])
      t.match(await fixture.services.webhooks.get(endpoint.id), { enabled: true, disabled_reason: null })
    })

    t.test('a change that rolls back sends nothing, and a change is never kept without its delivery', async (t) => {
      const { fixture, receiver, endpoint } = await withEndpoint(t, backend.url, ['user.created'])
      await refuseWrites(fixture, 'insert', 'webhook_deliveries', 'delivery storage refused')
      const email = uniqueEmail('unkept')
      await t.rejects(fixture.services.accounts.register(contextFrom('192.0.2.7'), { email, name: 'Unkept', password: TEST_PASSWORD }), /delivery storage refused/)
      t.equal(await fixture.repositories.users.findByEmail(email), undefined, 'the account was not kept without its event')
      t.same(await fixture.audited('user.created').then((rows) => rows.filter((row) => row.details.email === email)), [], 'nor its audit entry')
      await round(fixture)
      t.equal(receiver.received.length, 0)
      t.same(await deliveriesOf(fixture, endpoint.id), [])
    })

    t.test('a change that fails after its event was stored rolls the delivery back with it', async (t) => {
      const { fixture, receiver, endpoint, admin } = await withEndpoint(t, backend.url, ['user.role_assigned'])
      const user = await registered(fixture)
      // The role is granted first; the audit entry, stored after it, fails: nothing of the change stays.
      await refuseWrites(fixture, 'insert', 'audit_logs', 'audit storage refused')
      await t.rejects(fixture.services.roles.assign(actingAs(admin), user.id, 'moderator'), /audit storage refused/)
      await round(fixture)
      t.equal(receiver.received.length, 0)
      t.same(await deliveriesOf(fixture, endpoint.id), [])
    })

    t.test('a rotated secret signs beside the new one for 24 hours, then no longer', async (t) => {
      const { fixture, receiver, endpoint, admin } = await withEndpoint(t, backend.url, ['user.created'])
      const rotated = await fixture.services.webhooks.rotateSecret(actingAs(admin), endpoint.id)
      t.not(rotated.secret, endpoint.secret)
      const expiresIn = Date.parse(String(rotated.previous_secret_expires_at)) - Date.now()
      t.ok(Math.abs(expiresIn - PREVIOUS_SECRET_TTL_MS) < 5000)
      await register(fixture)
      await round(fixture)
      const [during] = receiver.received
      if (during === undefined) throw new Error('no delivery')
      t.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures')
      t.ok(new StandardWebhook(rotated.secret).verify(during.body, signed(during)), 'the new secret verifies')
      t.ok(new StandardWebhook(endpoint.secret).verify(during.body, signed(during)), 'the old one still verifies')

      fixture.clock.aheadMs += PREVIOUS_SECRET_TTL_MS + 1000
      await register(fixture)
      await round(fixture)
      const after = receiver.received[1]
      if (after === undefined) throw new Error('no delivery')
      const signatures = String(after.headers['webhook-signature']).split(' ')
      const at = new Date(Number(after.headers['webhook-timestamp']) * 1000)
      t.same(signatures, [new StandardWebhook(rotated.secret).sign(String(after.headers['webhook-id']), at, after.body)], 'only the new secret signs')
      t.match(await fixture.audited('webhook.secret_rotated'), [{ actor_id: admin.id, details: { webhook_id: endpoint.id } }])
    })

    t.test('a test event and a manual retry are sent at once', async (t) => {
      const { fixture, receiver, endpoint, admin } = await withEndpoint(t, backend.url, ['user.deleted'])
      const test = await fixture.services.webhooks.test(actingAs(admin), endpoint.id)
      t.match(test, { event_type: 'webhook.test', status: 'pending', attempts: 0 })
      await round(fixture)
      t.match(receiver.received, [{ payload: { type: 'webhook.test', data: { webhook_id: endpoint.id } } }])
      const retried = await fixture.services.webhooks.retry(actingAs(admin), endpoint.id, test.id)
      t.match(retried, { id: test.id, status: 'pending' })
      await round(fixture)
      t.equal(receiver.received.length, 2)
      t.equal(receiver.received[1]?.headers['webhook-id'], test.id, 'the same delivery, sent again')
      t.match(await fixture.audited('webhook.delivery_retried'), [{ details: { webhook_id: endpoint.id, delivery_id: test.id } }])
      await t.rejects(fixture.services.webhooks.retry(actingAs(admin), endpoint.id, '00000000-0000-7000-8000-000000000000'), { code: 'NOT_FOUND' })
      await fixture.services.webhooks.update(actingAs(admin), endpoint.id, { enabled: false })
      await t.rejects(fixture.services.webhooks.test(actingAs(admin), endpoint.id), { code: 'CONFLICT' })
    })

    t.test('each change of the catalogue is delivered with its data', async (t) => {
      const { fixture, receiver, admin } = await withEndpoint(t, backend.url, [
        'user.updated', 'user.password_changed', 'user.deleted', 'user.role_assigned', 'mfa.enabled', 'organization.created', 'membership.added', 'membership.removed',
        'domain.verified', 'domain.removed', 'sso_connection.created', 'sso_connection.deleted'
      ])
      const alice = await owner(fixture)
      await fixture.services.accounts.update(actingAs(alice), alice.id, { name: 'Alice B', password: 'an-entirely-new-passphrase', current_password: TEST_PASSWORD })
      await fixture.services.roles.assign(actingAs(admin), alice.id, 'moderator')
      const organization = await fixture.services.organizations.create(actingAs(alice), { name: 'Hooks', slug: `hooks-${alice.id.slice(-8)}` })
      const domain = await fixture.services.domains.claim(actingAs(alice), organization.id, { domain: 'hooks.example' })
      await fixture.services.domains.verify(actingAs(admin), organization.id, domain.id, 'operator')
      await fixture.services.domains.remove(actingAs(alice), organization.id, domain.id)
      const connection = await fixture.services.ssoConnections.create(actingAs(alice), organization.id, {
        name: 'Hooks IdP', idp_entity_id: 'https://idp.example/saml', idp_sso_url: 'https://idp.example/sso', idp_certificates: [signingKeyPair().certificate]
      })
      await fixture.services.ssoConnections.remove(actingAs(alice), organization.id, connection.id)
      await fixture.services.accounts.remove(actingAs(admin), alice.id, {})
      await round(fixture)
      const types = receiver.received.map((delivery) => delivery.payload.type).sort()
      t.same(types, [
        'domain.removed', 'domain.verified', 'organization.created', 'sso_connection.created', 'sso_connection.deleted', 'user.deleted',
        'user.password_changed', 'user.role_assigned', 'user.updated'
      ])
      const byType = Object.fromEntries(receiver.received.map(({ payload }) => [payload.type, payload.data]))
      t.same(byType['user.updated'], { user_id: alice.id, actor_id: alice.id, changed: ['name', 'password'] })
      t.same(byType['user.password_changed'], { user_id: alice.id, actor_id: alice.id, reset: false })
      t.same(byType['user.role_assigned'], { user_id: alice.id, actor_id: admin.id, role: 'moderator' })
      t.same(byType['organization.created'], { organization_id: organization.id, actor_id: alice.id, slug: organization.slug })
      t.same(byType['user.deleted'], { user_id: alice.id, actor_id: admin.id })
      const claim = { organization_id: organization.id, domain_id: domain.id, domain: 'hooks.example' }
      t.same(byType['domain.verified'], { ...claim, actor_id: admin.id, method: 'operator' })
      t.same(byType['domain.removed'], { ...claim, actor_id: alice.id })
      t.same(byType['sso_connection.deleted'], { organization_id: organization.id, connection_id: connection.id, actor_id: alice.id })
      for (const delivery of receiver.received) t.notMatch(delivery.body, /passphrase|whsec_|\$pbkdf2|\$argon/, `${delivery.payload.type}: no secret`)
    })

    t.test('with AUDIT_STREAM=webhooks every audit entry is delivered as audit.entry, as the log stores it', async (t) => {
      const { fixture, receiver } = await withEndpoint(t, backend.url, ['audit.entry'], { AUDIT_STREAM: 'webhooks' })
      await t.rejects(fixture.services.signIn.withPassword(contextFrom('192.0.2.9'), { email: uniqueEmail('nobody'), password: 'wrong-password-1' }))
      await round(fixture)
      const failed = receiver.received.find((delivery) => delivery.payload.data.event === 'auth.login_failed')
      t.match(failed?.payload, { type: 'audit.entry', data: { outcome: 'failure', ip: '192.0.2.9', details: { reason: 'unknown_email' } } })
      const [stored] = await fixture.audited('auth.login_failed')
      t.equal(failed?.payload.data.id, (stored as { id?: string } | undefined)?.id, 'the entry as stored, with its id')
    })

    t.test('with AUDIT_STREAM=webhooks a refresh\'s entry is delivered too: stored with its delivery around the rotation', async (t) => {
      const { fixture, receiver } = await withEndpoint(t, backend.url, ['audit.entry'], { AUDIT_STREAM: 'webhooks' })
      const user = await registered(fixture)
      const context = contextFrom('192.0.2.10')
      const credentials = { email: user.email, password: TEST_PASSWORD }
      const signedIn = await fixture.services.signIn.withPassword(context, credentials)
      if (!('refresh_token' in signedIn)) throw new Error('expected a token pair')
      await fixture.services.signIn.refresh(context, signedIn.refresh_token)
      await round(fixture)
      const [stored] = await fixture.audited('auth.refresh')
      const delivered = receiver.received.find((delivery) => delivery.payload.data.event === 'auth.refresh')
      t.match(delivered?.payload, { type: 'audit.entry', data: { actor_id: user.id, ip: '192.0.2.10' } })
      t.equal(delivered?.payload.data.id, (stored as { id?: string } | undefined)?.id, 'the entry as stored, with its id')
    })
  })
}

t.test('SSRF: a name resolving to a forbidden address is refused at send time, before any connection', async (t) => {
  const forbidden = ['169.254.169.254', '10.0.0.7', '192.168.1.1', '172.16.0.1', '100.64.0.1', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '0.0.0.0']
  let answer = forbidden[0]!
  const asked: string[] = []
  const resolve: Resolver = async (hostname) => {
    asked.push(hostname)
    return [{ address: answer, family: answer.includes(':') ? 6 : 4 }]
  }
  // SQLite in memory: the only sockets the process could open here are the sender's.
  const fixture = await buildServices(t, null, {}, { resolve })
  const admin = await owner(fixture, ['super_admin'])
  const endpoint = await fixture.services.webhooks.create(actingAs(admin), { url: 'https://hooks.example.test/users', events: ['webhook.test'] })
  let sockets = 0
  const counted = () => { sockets++ }
  diagnosticsChannel.subscribe('net.client.socket', counted)
  t.teardown(() => { diagnosticsChannel.unsubscribe('net.client.socket', counted) })
  for (const address of forbidden) {
    answer = address
    const delivery = await fixture.services.webhooks.test(actingAs(admin), endpoint.id)
    await round(fixture)
    const row = await fixture.database.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', delivery.id).executeTakeFirstOrThrow()
    t.match(row, { status: 'pending', attempts: 1, last_status: null, last_error: /^refused: hooks\.example\.test resolves to/ }, `${address} is refused`)
  }
  t.equal(asked.length, forbidden.length, 'the name was resolved at each send')
  t.equal(sockets, 0, 'no connection was opened')
})

t.test('SSRF: an endpoint\'s URL must be https to an address the operator allows', async (t) => {
  const fixture = await buildServices(t, null)
  const admin = await owner(fixture, ['super_admin'])
  for (const url of ['http://hooks.example.com/', 'https://169.254.169.254/latest/meta-data/', 'https://10.1.2.3/', 'https://[::1]/', 'http://127.0.0.1:3000/', 'https://user:pass@hooks.example.com/']) {
    await t.rejects(fixture.services.webhooks.create(actingAs(admin), { url, events: ['user.created'] }), { code: 'VALIDATION_FAILED', details: [{ path: '/url' }] }, url)
  }
  const allowed = await buildServices(t, null, { WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/8' })
  const operator = await owner(allowed, ['super_admin'])
  t.ok(await allowed.services.webhooks.create(actingAs(operator), { url: 'https://10.1.2.3/hooks', events: ['user.created'] }), 'a network the operator allows')
  await t.rejects(allowed.services.webhooks.create(actingAs(operator), { url: 'http://10.1.2.3/hooks', events: ['user.created'] }), { code: 'VALIDATION_FAILED' }, 'http only to loopback')
})
