import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import t from 'tap'
import { WEBHOOK_EVENT_TYPES } from '../../../schemas/webhooks.js'
import { deliveryRow } from '../../../src/services/webhooks/publisher.js'
import { type Account, createAccount, uniqueEmail, withToken } from '../../helpers/accounts.js'
import { build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl, sqliteFile } from '../../helpers/database.js'
import { webhookReceiver } from '../../helpers/servers/webhook-receiver.js'

/** Webhook endpoints and deliveries through the API (docs/api.md, "Webhooks"). */

const LOOPBACK = { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' }
const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000'

async function as (app: FastifyInstance, account: Account, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return await app.inject(withToken(account.token, { method, url, ...(payload !== undefined && { payload }) }))
}

for (const backend of backends()) {
  t.test(`webhooks through the API (${backend.name})`, async (t) => {
    const app = await build(t, { postgresUrl: backend.url, env: LOOPBACK })
    const operator = await createAccount(app, { roles: ['super_admin'] })
    const receiver = await webhookReceiver(t)

    t.test('only a holder of the admin permission manages endpoints', async (t) => {
      const admin = await createAccount(app, { roles: ['admin'] })
      const user = await createAccount(app)
      for (const account of [admin, user]) {
        const refused = await as(app, account, 'GET', '/api/v1/webhooks')
        t.equal(refused.statusCode, 403)
        t.equal(refused.json().error.code, 'FORBIDDEN')
      }
      t.equal((await app.inject({ method: 'GET', url: '/api/v1/webhooks' })).statusCode, 401)
      t.equal((await as(app, user, 'POST', '/api/v1/webhooks', { url: receiver.url, events: ['user.created'] })).statusCode, 403)
    })

    t.test('create, read, list, change and delete an endpoint; the secret only in the creation\'s answer', async (t) => {
      const created = await as(app, operator, 'POST', '/api/v1/webhooks', { url: receiver.url, events: ['user.created', 'user.deleted'], description: 'CRM sync' })
      t.equal(created.statusCode, 201)
      const webhook = created.json().data
      t.equal(created.headers.location, `/api/v1/webhooks/${webhook.id}`)
      t.match(webhook, { url: receiver.url, events: ['user.created', 'user.deleted'], description: 'CRM sync', enabled: true, disabled_reason: null, secret: /^whsec_/ })
      const read = await as(app, operator, 'GET', `/api/v1/webhooks/${webhook.id}`)
      t.equal(read.statusCode, 200)
      t.notOk('secret' in read.json().data, 'never shown again')
      t.notOk(read.body.includes(webhook.secret.slice(6)))
      const listed = await as(app, operator, 'GET', '/api/v1/webhooks?fields=url,events')
      t.equal(listed.statusCode, 200)
      t.match(listed.json(), { data: [{ id: webhook.id, url: receiver.url, events: ['user.created', 'user.deleted'] }], meta: { kind: 'offset', total: 1 } })
      t.notOk(listed.body.includes('whsec_'))

      const changed = await as(app, operator, 'PATCH', `/api/v1/webhooks/${webhook.id}`, { events: ['user.deleted'], enabled: false })
      t.equal(changed.statusCode, 200)
      t.match(changed.json().data, { events: ['user.deleted'], enabled: false, disabled_reason: 'manual' })
      const test = await as(app, operator, 'POST', `/api/v1/webhooks/${webhook.id}/test`)
      t.equal(test.statusCode, 409, 'a disabled endpoint is not sent a test')

      const rotated = await as(app, operator, 'POST', `/api/v1/webhooks/${webhook.id}/rotate-secret`)
      t.equal(rotated.statusCode, 200)
      t.match(rotated.json().data, { secret: /^whsec_/, previous_secret_expires_at: /Z$/ })
      t.not(rotated.json().data.secret, webhook.secret)

      t.equal((await as(app, operator, 'DELETE', `/api/v1/webhooks/${webhook.id}`)).statusCode, 204)
      t.equal((await as(app, operator, 'GET', `/api/v1/webhooks/${webhook.id}`)).statusCode, 404)
      t.equal((await as(app, operator, 'DELETE', `/api/v1/webhooks/${webhook.id}`)).statusCode, 204, 'deleting again succeeds')
      t.equal((await as(app, operator, 'POST', `/api/v1/webhooks/${UNKNOWN_ID}/rotate-secret`)).statusCode, 404)
      const events = (await app.database.db.selectFrom('audit_logs').select('event').where('event', 'like', 'webhook.%').execute()).map((row) => row.event)
      t.same(events.sort(), ['webhook.created', 'webhook.deleted', 'webhook.secret_rotated', 'webhook.updated'])
    })

    t.test('bad endpoints are refused with the error envelope', async (t) => {
      const cases = [
        { url: 'http://hooks.example.com/', events: ['user.created'] },
        { url: 'https://169.254.169.254/latest/meta-data/', events: ['user.created'] },
        { url: 'https://192.168.1.10/hooks', events: ['user.created'] },
        { url: 'not a url', events: ['user.created'] },
        { url: 'https://hooks.example.com/', events: ['user.exploded'] },
        { url: 'https://hooks.example.com/', events: [] },
        { url: 'https://hooks.example.com/', events: ['user.created'], secret: 'whsec_mine' }
      ]
      for (const payload of cases) {
        const response = await as(app, operator, 'POST', '/api/v1/webhooks', payload)
        t.equal(response.statusCode, 400, JSON.stringify(payload))
        t.equal(response.json().error.code, 'VALIDATION_FAILED')
      }
    })

    t.test('a test event, the deliveries page, and a retry', async (t) => {
      const webhook = (await as(app, operator, 'POST', '/api/v1/webhooks', { url: receiver.url, events: ['user.deleted'] })).json().data
      const before = receiver.received.length
      const test = await as(app, operator, 'POST', `/api/v1/webhooks/${webhook.id}/test`)
      t.equal(test.statusCode, 202)
      const delivery = test.json().data
      t.match(delivery, { event_type: 'webhook.test', status: 'pending', attempts: 0 })
      await receiver.receivedCount(before + 1)
      const received = receiver.received[before]!
      t.ok(new StandardWebhook(webhook.secret).verify(received.body, received.headers as Record<string, string>), 'verified as a receiver verifies it')
      await app.services.webhookDispatcher.round()
      const page = await as(app, operator, 'GET', `/api/v1/webhooks/${webhook.id}/deliveries`)
      t.equal(page.statusCode, 200)
      t.match(page.json().data, [{ id: delivery.id, event_type: 'webhook.test', status: 'succeeded', attempts: 1, last_status: 200, next_attempt_at: null }])
      const retried = await as(app, operator, 'POST', `/api/v1/webhooks/${webhook.id}/deliveries/${delivery.id}/retry`)
      t.equal(retried.statusCode, 202)
      await receiver.receivedCount(before + 2)
      t.equal(receiver.received[before + 1]?.headers['webhook-id'], delivery.id)
      t.equal((await as(app, operator, 'POST', `/api/v1/webhooks/${webhook.id}/deliveries/${UNKNOWN_ID}/retry`)).statusCode, 404)
      t.equal((await as(app, operator, 'GET', `/api/v1/webhooks/${UNKNOWN_ID}/deliveries`)).statusCode, 404)
    })

    t.test('a sign-up through the API reaches a subscribed endpoint', async (t) => {
      const webhook = (await as(app, operator, 'POST', '/api/v1/webhooks', { url: `${receiver.url}/signups`, events: ['user.created'] })).json().data
      const email = uniqueEmail('signup')
      const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email, name: 'Sign Up', password: 'correct-horse-battery' } })
      t.equal(created.statusCode, 201)
      const userId = created.json().data.id
      await app.services.webhookDispatcher.round()
      const mine = receiver.received.filter((delivery) => delivery.path === '/hooks/signups')
      t.match(mine.map((delivery) => delivery.payload), [{ type: 'user.created', data: { user_id: userId } }])
      t.notOk(mine[0]?.body.includes(email), 'ids, not personal data')
      t.ok(new StandardWebhook(webhook.secret).verify(mine[0]!.body, mine[0]!.headers as Record<string, string>))
    })
  })

  t.test(`two instances on one database deliver each event once (${backend.name})`, async (t) => {
    const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
    const first = await build(t, { databaseUrl, env: LOOPBACK })
    const second = await build(t, { databaseUrl, env: LOOPBACK })
    const receiver = await webhookReceiver(t)
    const operator = await createAccount(first, { roles: ['super_admin'] })
    const webhook = (await as(first, operator, 'POST', '/api/v1/webhooks', { url: receiver.url, events: ['user.created'] })).json().data
    // Sixty deliveries due at once, stored without a kick, so that both instances' rounds race for them.
    const now = new Date().toISOString()
    const rows = Array.from({ length: 60 }, () => deliveryRow(webhook.id, { type: 'webhook.test', data: { webhook_id: webhook.id } }, now))
    await first.repositories.webhooks.addDeliveries(rows)
    const rounds = [first, second, first, second].map(async (app) => { await app.services.webhookDispatcher.round() })
    await Promise.all(rounds)
    const ids = receiver.received.map((delivery) => String(delivery.headers['webhook-id']))
    t.equal(ids.length, 60, 'sixty sent')
    t.same([...new Set(ids)].sort(), rows.map((row) => row.id).sort(), 'each exactly once')
    const settled = await first.database.db.selectFrom('webhook_deliveries').select('status').where('endpoint_id', '=', webhook.id).execute()
    t.ok(settled.every((row) => row.status === 'succeeded'))
  })
}

t.test('the OpenAPI document lists the event catalogue as webhooks, and the endpoints as webhooks.* operations', async (t) => {
  const app = await build(t)
  const document = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json()
  t.same(Object.keys(document.webhooks).sort(), [...WEBHOOK_EVENT_TYPES].sort())
  t.match(document.webhooks['user.created'].post.requestBody.content['application/json'].schema, {
    properties: { type: { const: 'user.created' }, data: { properties: { user_id: { type: 'string' } } } }
  })
  const operations = Object.entries(document.paths as Record<string, Record<string, { operationId: string }>>)
    .filter(([path]) => path.startsWith('/api/v1/webhooks'))
    .flatMap(([, methods]) => Object.values(methods).map((operation) => operation.operationId)).sort()
  t.same(operations, [
    'webhooks.create', 'webhooks.delete', 'webhooks.deliveries.list', 'webhooks.deliveries.retry', 'webhooks.get', 'webhooks.list',
    'webhooks.rotateSecret', 'webhooks.test', 'webhooks.update'
  ])
})

t.test('AUDIT_STREAM=file writes each stored audit entry as one NDJSON line, as the audit log shows it', async (t) => {
  const { path } = sqliteFile(t)
  const file = join(path, '..', 'audit.ndjson')
  const app = await build(t, { env: { AUDIT_STREAM: 'file', AUDIT_STREAM_FILE: file } })
  const admin = await createAccount(app, { roles: ['admin'] })
  const failed = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: uniqueEmail('nobody'), password: 'wrong-password-1' } })
  t.equal(failed.statusCode, 401)
  const listed = (await as(app, admin, 'GET', '/api/v1/audit-logs?limit=100')).json().data
  await app.close()
  const lines = (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line))
  t.ok(lines.length >= 3, 'registration, sign-in, the failure')
  const refusal = lines.find((entry) => entry.event === 'auth.login_failed')
  t.match(refusal, { outcome: 'failure', details: { reason: 'unknown_email' } })
  t.same(refusal, listed.find((entry: { id: string }) => entry.id === refusal.id), 'the line is the entry as GET /audit-logs shows it')
  t.notOk(lines.some((entry) => JSON.stringify(entry).includes('wrong-password-1')), 'redacted as stored')
})
