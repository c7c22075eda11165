import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { certificateBody, certificateFingerprint } from '../../../src/federation/saml-metadata.js'
import { build } from '../../helpers/app.js'
import { backends, freshDatabaseUrl, suiteName } from '../../helpers/database.js'
import { appWithMail } from '../../helpers/organizations.js'
import { TestIdentityProvider } from '../../helpers/servers/saml-identity-provider.js'
import { APPLICATION, SSO_ENV, SsoHarness, uniqueDomain } from '../../helpers/sso.js'

// Every server here listens on 127.0.0.1, and the apps resolve loopback names only
// (test/helpers/app.ts): no request leaves the machine.

/** The setting that lets metadata be read from this machine, as a development IdP would need. */
const LOOPBACK_ALLOWED = { SSO_METADATA_ALLOWED_NETWORKS: '127.0.0.0/8' }
const HOUR = 60 * 60 * 1000

interface Answer { status: number, body: string, location?: string }

/**
 * Where an IdP publishes its metadata: answers each GET with what `answer` says when it arrives,
 * and counts them; `holdNext()` keeps the next one's answer until the promise it gives back is
 * released, and tells when that request has arrived.
 */
async function metadataServer (t: Test, initial: Answer) {
  let held: { arrived: () => void, release: Promise<void> } | null = null
  const state = {
    answer: initial,
    requests: [] as http.IncomingHttpHeaders[],
    holdNext () {
      let release = (): void => {}
      let arrived = (): void => {}
      const arrival = new Promise<void>((resolve) => { arrived = resolve })
      held = { arrived, release: new Promise<void>((resolve) => { release = resolve }) }
      return { arrival, release }
    }
  }
  const server = http.createServer((request, response) => {
    state.requests.push(request.headers)
    const { status, body, location } = state.answer
    const answer = (): void => {
      response.writeHead(status, { 'content-type': 'application/samlmetadata+xml', ...(location !== undefined && { location }) })
      response.end(body)
    }
    const hold = held
    held = null
    if (hold === null) return answer()
    hold.arrived()
    void hold.release.then(answer)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/federationmetadata.xml`
  return { state, url }
}

const fingerprintOf = (idp: TestIdentityProvider) => certificateFingerprint(certificateBody(idp.certificate))

/** Makes the connection's next metadata read due now, as a day passing would. */
async function dueNow (app: FastifyInstance, connectionId: string): Promise<void> {
  await app.database.db.updateTable('sso_connections').set({ idp_metadata_due_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', connectionId).execute()
}

async function dueAt (app: FastifyInstance, connectionId: string): Promise<number> {
  const row = await app.database.db.selectFrom('sso_connections').select('idp_metadata_due_at').where('id', '=', connectionId).executeTakeFirstOrThrow()
  return Date.parse(row.idp_metadata_due_at ?? '')
}

async function auditOf (app: FastifyInstance, connectionId: string) {
  return await app.database.db.selectFrom('audit_logs').select(['event', 'outcome', 'actor_id', 'details'])
    .where('details', 'like', `%${connectionId}%`).orderBy('created_at').execute()
}

for (const backend of backends()) {
  t.test(`an SSO connection configured by its IdP's metadata URL (${suiteName(backend)})`, async (t) => {
    /** A team with a verified domain, on an app that may fetch from this machine. */
    const setUp = async (t: Test, env: Record<string, string> = LOOPBACK_ALLOWED, databaseUrl?: string) => {
      const { app, smtp } = await appWithMail(t, backend.url, {
        env: { ...SSO_ENV, ...env }, ...(databaseUrl !== undefined && { databaseUrl })
      })
      const h = new SsoHarness(app, smtp)
      const team = await h.team('Acme')
      const domain = uniqueDomain()
      await h.verifiedDomain(team.owner, team.organization.id, domain)
      const path = `/organizations/${team.organization.id}/sso-connections`
      return { app, h, ...team, domain, path }
    }

    t.test('read when the connection is made: the IdP it describes signs people in', async (t) => {
      const { app, h, owner, domain, path } = await setUp(t)
      const idp = new TestIdentityProvider()
      const published = await metadataServer(t, { status: 200, body: idp.metadata() })
      const created = await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })
      t.equal(created.statusCode, 201, created.body)
      const connection = created.json().data
      t.match(connection, {
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate_fingerprints: [fingerprintOf(idp)],
        idp_metadata_url: published.url
      })
      t.ok(Math.abs(Date.parse(connection.idp_metadata_read_at) - Date.now()) < 60_000, 'read just now')
      t.ok(Math.abs(await dueAt(app, connection.id) - (Date.now() + 24 * HOUR)) < 60_000, 'read again in a day')
      t.equal(published.state.requests.length, 1, 'one GET')
      t.match(published.state.requests[0]?.accept, /application\/samlmetadata\+xml/)
      t.equal(published.state.requests[0]?.['user-agent'], 'users-api-sso/1')

      const spMetadata = (await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/metadata` })).body
      const started = await h.start(connection.id)
      const response = await idp.respond(spMetadata, { nameId: `ada@${domain}`, inResponseTo: started.requestId })
      const back = SsoHarness.back(await h.acs(connection.id, response, started.relayState))
      t.equal(`${back.origin}${back.pathname}`, APPLICATION)
      t.ok(back.searchParams.get('code'), 'signed in')

      // Given another way later, the URL is no longer read.
      const pasted = await h.call(owner, 'PATCH', `${path}/${connection.id}`, { idp_metadata_xml: idp.metadata() })
      t.match(pasted.json().data, { idp_metadata_url: null, idp_metadata_read_at: null })
    })

    t.test('a URL that cannot give usable metadata is refused with why, and nothing is stored', async (t) => {
      const { app, h, owner, path } = await setUp(t)
      const idp = new TestIdentityProvider()
      const published = await metadataServer(t, { status: 200, body: idp.metadata() })
      const cases: Array<[string, Answer, RegExp]> = [
        ['a 404', { status: 404, body: 'not here' }, /^the metadata could not be read: answered 404$/],
        ['a redirect, not followed', { status: 302, body: '', location: 'http://169.254.169.254/latest/meta-data/' }, /answered 302 \(redirects are not followed\)/],
        ['an answer over 500,000 bytes', { status: 200, body: `<x>${'a'.repeat(500_000)}</x>` }, /larger than 500000 bytes/],
        ['not XML', { status: 200, body: '{"issuer":"https://idp.test"}' }, /not well-formed XML/],
        ['XML of no IdP', { status: 200, body: '<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>' }, /describes no identity provider/]
      ]
      for (const [name, answer, message] of cases) {
        published.state.answer = answer
        const refused = await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })
        t.equal(refused.statusCode, 400, name)
        t.match(refused.json().error, { code: 'VALIDATION_FAILED', details: [{ path: '/idp_metadata_url', message }] }, name)
      }
      const both = await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url, idp_metadata_xml: idp.metadata() })
      t.equal(both.statusCode, 400, 'the URL and the metadata together')
      t.match(both.json().error.details, [{ message: /one of them/ }])
      const count = await app.database.db.selectFrom('sso_connections').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow()
      t.equal(Number(count.count), 0, 'no connection stored')
    })

    t.test('metadata built to cost (thousands of empty descriptors before the IdP) is read in one pass', async (t) => {
      const { h, owner, path } = await setUp(t)
      const idp = new TestIdentityProvider()
      const filler = '<md:EntityDescriptor entityID="x"/>'.repeat(13_000)
      const body = `<md:EntitiesDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">${filler}${idp.metadata().replace(/^<\?xml[^>]*>/, '')}</md:EntitiesDescriptor>`
      t.ok(body.length > 450_000 && body.length < 500_000, `${body.length} bytes, under the cap`)
      const published = await metadataServer(t, { status: 200, body })
      const started = performance.now()
      const created = await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })
      const took = performance.now() - started
      t.equal(created.statusCode, 201, created.body)
      t.equal(created.json().data.idp_entity_id, idp.entityId, 'the IdP after the filler')
      // The XPath this replaced took 1.2 to 3.6 s for such a document (the square of its size);
      // one pass takes about a tenth of a second.
      t.ok(took < 800, `read and parsed in ${Math.round(took)} ms`)
    })

    t.test('SSRF: under the default rule no address of this machine is read, whatever webhooks may reach', async (t) => {
      // The webhooks' list is the operator's trust in super_admins, not in every organization's owner.
      const { h, owner, path } = await setUp(t, { WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8' })
      const published = await metadataServer(t, { status: 200, body: new TestIdentityProvider().metadata() })
      const port = new URL(published.url).port
      const cases: Array<[string, RegExp]> = [
        [published.url, /must use https/],
        [`https://127.0.0.1:${port}/federationmetadata.xml`, /points to a loopback address, which SSO_METADATA_ALLOWED_NETWORKS does not allow/],
        [`https://localhost:${port}/federationmetadata.xml`, /refused: localhost resolves to a loopback address \(SSO_METADATA_ALLOWED_NETWORKS/],
        ['https://user:secret@idp.example.test/metadata', /must not contain a user name or password/],
        ['ftp://idp.example.test/metadata', /must use https/]
      ]
      for (const [url, message] of cases) {
        const refused = await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: url })
        t.equal(refused.statusCode, 400, url)
        t.match(refused.json().error.details, [{ path: '/idp_metadata_url', message }], url)
      }
      t.equal(published.state.requests.length, 0, 'the metadata server was never reached')
    })

    t.test('refreshed daily: a new certificate is taken up; a failed read keeps the last good one, audited', async (t) => {
      const { app, h, owner, domain, path } = await setUp(t)
      const first = new TestIdentityProvider()
      const published = await metadataServer(t, { status: 200, body: first.metadata() })
      const connection = (await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })).json().data
      const refresh = app.services.ssoMetadataRefresh

      t.same(await refresh.refreshDue(), { read: 0, failed: 0 }, 'nothing due before a day has passed')
      t.equal(published.state.requests.length, 1)

      // The IdP fails to answer: the connection keeps signing people in with what it had.
      await dueNow(app, connection.id)
      published.state.answer = { status: 500, body: 'down' }
      t.same(await refresh.refreshDue(), { read: 0, failed: 1 })
      const kept = (await h.call(owner, 'GET', `${path}/${connection.id}`)).json().data
      t.same(kept.idp_certificate_fingerprints, [fingerprintOf(first)])
      t.equal(kept.idp_metadata_read_at, connection.idp_metadata_read_at, 'the last good read')
      t.ok(Math.abs(await dueAt(app, connection.id) - (Date.now() + HOUR)) < 60_000, 'tried again within the hour')
      t.match(await auditOf(app, connection.id), [
        { event: 'sso_connection.created' },
        { event: 'sso_connection.metadata_unreadable', outcome: 'failure', actor_id: null, details: /answered 500/ }
      ])
      // Failing again: tried again after twice as long, and not audited again.
      await dueNow(app, connection.id)
      t.same(await refresh.refreshDue(), { read: 0, failed: 1 })
      t.ok(Math.abs(await dueAt(app, connection.id) - (Date.now() + 2 * HOUR)) < 60_000, 'then within two hours')
      t.equal((await auditOf(app, connection.id)).length, 2, 'the first failure of a run audited, not the next')

      // The IdP now publishes another key: taken up at the next read, and the new key signs people in.
      const next = new TestIdentityProvider()
      published.state.answer = { status: 200, body: next.metadata() }
      await dueNow(app, connection.id)
      t.same(await refresh.refreshDue(), { read: 1, failed: 0 })
      const updated = (await h.call(owner, 'GET', `${path}/${connection.id}`)).json().data
      t.same(updated.idp_certificate_fingerprints, [fingerprintOf(next)])
      t.equal(updated.idp_entity_id, next.entityId)
      t.ok(Date.parse(updated.idp_metadata_read_at) > Date.parse(connection.idp_metadata_read_at), 'read again')
      t.match((await auditOf(app, connection.id)).at(-1), { event: 'sso_connection.updated', actor_id: null, details: new RegExp(fingerprintOf(next)) })
      const spMetadata = (await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/metadata` })).body
      const started = await h.start(connection.id)
      const response = await next.respond(spMetadata, { nameId: `ada@${domain}`, inResponseTo: started.requestId })
      t.ok(SsoHarness.back(await h.acs(connection.id, response, started.relayState)).searchParams.get('code'), 'the new key signs in')

      // The same metadata read again changes nothing and records nothing.
      const entries = await auditOf(app, connection.id)
      await dueNow(app, connection.id)
      t.same(await refresh.refreshDue(), { read: 1, failed: 0 })
      t.equal((await auditOf(app, connection.id)).length, entries.length)
    })

    t.test('a read the job made before an owner gave the URL again does not overwrite what the owner read', async (t) => {
      const { app, h, owner, path } = await setUp(t)
      const first = new TestIdentityProvider()
      const published = await metadataServer(t, { status: 200, body: first.metadata() })
      const connection = (await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })).json().data
      await dueNow(app, connection.id)
      // The job's read is in flight with the old key when the IdP rotates in a hurry and the owner reads the URL again.
      const { arrival, release } = published.state.holdNext()
      const refreshing = app.services.ssoMetadataRefresh.refreshDue()
      await arrival
      const next = new TestIdentityProvider()
      published.state.answer = { status: 200, body: next.metadata() }
      const reread = await h.call(owner, 'PATCH', `${path}/${connection.id}`, { idp_metadata_url: published.url })
      t.same(reread.json().data.idp_certificate_fingerprints, [fingerprintOf(next)])
      release()
      await refreshing
      const now = (await h.call(owner, 'GET', `${path}/${connection.id}`)).json().data
      t.same(now.idp_certificate_fingerprints, [fingerprintOf(next)], 'the owner\'s read stands')
      t.ok(Math.abs(await dueAt(app, connection.id) - (Date.now() + 24 * HOUR)) < 60_000, 'next due a day after the owner\'s read')
      t.notOk((await auditOf(app, connection.id)).some((entry) => entry.actor_id === null), 'the job recorded nothing')
    })

    t.test('two instances due at once read the metadata once', async (t) => {
      const databaseUrl = await freshDatabaseUrl(t, backend.url, { shared: true })
      const { app, h, owner, path } = await setUp(t, LOOPBACK_ALLOWED, databaseUrl)
      const other = await build(t, { databaseUrl, env: { ...SSO_ENV, ...LOOPBACK_ALLOWED } })
      const published = await metadataServer(t, { status: 200, body: new TestIdentityProvider().metadata() })
      const connection = (await h.call(owner, 'POST', path, { name: 'Acme IdP', idp_metadata_url: published.url })).json().data
      await dueNow(app, connection.id)
      const outcomes = await Promise.all([app, other].map(async (instance) =>
        await instance.services.ssoMetadataRefresh.refreshDue()))
      t.equal(outcomes.reduce((sum, outcome) => sum + outcome.read, 0), 1, 'one read between them')
      t.equal(published.state.requests.length, 2, 'the creation\'s GET and one refresh')
    })
  })
}
