import t from 'tap'
import { createAccount } from '../../helpers/accounts.js'
import { backends, suiteName } from '../../helpers/database.js'
import { appWithMail, refused } from '../../helpers/organizations.js'
import { signingKeyPair, TestIdentityProvider } from '../../helpers/servers/saml-identity-provider.js'
import { SSO_ENV, SsoHarness, uniqueDomain } from '../../helpers/sso.js'

/**
 * Connections and discovery (docs/api.md, "Enterprise sign-in"): only owners connect an IdP,
 * bad metadata is refused with its reason, an address routes only through a verified domain,
 * and the accounts an IdP signs in obey the account-claiming rule.
 */

/** The IdP's metadata with `count` more signing keys beside its own, each a certificate of its own. */
function withSigningCertificates (metadata: string, count: number): string {
  const body = (pem: string) => pem.replace(/-----[A-Z ]+-----|\s/g, '')
  const descriptor = /<KeyDescriptor[\s\S]*?<\/KeyDescriptor>/.exec(metadata)?.[0] ?? ''
  const more = Array.from({ length: count }, () =>
    descriptor.replace(/<ds:X509Certificate>[^<]*</, `<ds:X509Certificate>${body(signingKeyPair().certificate)}<`))
  return metadata.replace(descriptor, more.join('') + descriptor)
}

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const { app, smtp } = await appWithMail(t, backend.url, { env: SSO_ENV })
    const h = new SsoHarness(app, smtp)
    /** A sign-in of `email` through the connection, as its IdP vouches: where the browser is sent back. */
    const signIn = async (
      connection: { id: string }, idp: TestIdentityProvider, spMetadata: string, email: string, groups: string[] = []
    ) => {
      const started = await h.start(connection.id)
      const shape = { nameId: email, inResponseTo: started.requestId, attributes: { groups } }
      const answer = await h.acs(connection.id, await idp.respond(spMetadata, shape), started.relayState)
      return { back: SsoHarness.back(answer), verifier: started.verifier }
    }

    t.test('only owners (and a super_admin) connect an IdP; members read the connections; outsiders learn nothing', async (t) => {
      const { owner, organization, admin, member } = await h.team('Roles')
      const idp = new TestIdentityProvider()
      const body = { name: 'Acme IdP', idp_metadata_xml: idp.metadata() }
      for (const caller of [admin, member]) {
        refused(t, await h.call(caller, 'POST', `/organizations/${organization.id}/sso-connections`, body), 403, 'FORBIDDEN')
      }
      const outsider = await createAccount(app)
      refused(t, await h.call(outsider, 'POST', `/organizations/${organization.id}/sso-connections`, body), 404, 'NOT_FOUND')
      const created = await h.call(owner, 'POST', `/organizations/${organization.id}/sso-connections`, body)
      t.equal(created.statusCode, 201, created.body)
      const connection = created.json().data
      t.equal(created.headers.location, `/api/v1/organizations/${organization.id}/sso-connections/${connection.id}`)
      t.same(connection.idp_certificate_fingerprints.length, 1)
      t.equal(connection.idp_sso_url, idp.ssoUrl)
      const listed = await h.call(member, 'GET', `/organizations/${organization.id}/sso-connections`)
      t.same(listed.json().data.map((item: { id: string }) => item.id), [connection.id])
      refused(t, await h.call(outsider, 'GET', `/organizations/${organization.id}/sso-connections/${connection.id}`), 404, 'NOT_FOUND')
      refused(t, await h.call(admin, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, { enabled: false }), 403, 'FORBIDDEN')
      const other = await h.team('Other')
      refused(t, await h.call(other.owner, 'GET', `/organizations/${other.organization.id}/sso-connections/${connection.id}`), 404, 'NOT_FOUND', 'SSO connection not found')
      refused(t, await h.call(other.owner, 'DELETE', `/organizations/${other.organization.id}/sso-connections/${connection.id}`), 404, 'NOT_FOUND')

      const renamed = await h.call(owner, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, { name: 'Renamed', default_role: 'admin' })
      t.match(renamed.json().data, { name: 'Renamed', default_role: 'admin', idp_entity_id: idp.entityId })
      t.equal((await h.call(owner, 'DELETE', `/organizations/${organization.id}/sso-connections/${connection.id}`)).statusCode, 204)
      refused(t, await h.call(owner, 'GET', `/organizations/${organization.id}/sso-connections/${connection.id}`), 404, 'NOT_FOUND')
      const events = (await app.database.db.selectFrom('audit_logs').select('event').where('details', 'like', `%${connection.id}%`).execute()).map((row) => row.event)
      t.same(events.filter((event) => event.startsWith('sso_connection.')).sort(), ['sso_connection.created', 'sso_connection.deleted', 'sso_connection.updated'])
    })

    t.test('an IdP the service cannot use is refused with the reason', async (t) => {
      const { owner, organization } = await h.team('Validation')
      const idp = new TestIdentityProvider()
      const path = `/organizations/${organization.id}/sso-connections`
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ idp_metadata_xml: '<not xml' }, /not well-formed/],
        [{ idp_metadata_xml: '<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata"/>' }, /no identity provider/],
        [{ idp_metadata_xml: idp.metadata().replace(/<ds:X509Certificate>[^<]*<\/ds:X509Certificate>/g, '') }, /no signing certificate/],
        [{ idp_metadata_xml: idp.metadata(), idp_entity_id: 'urn:x' }, /one of them/],
        [{ idp_entity_id: 'urn:x', idp_sso_url: 'https://idp.test/sso' }, /go together/],
        [{ idp_entity_id: 'urn:x', idp_sso_url: 'https://idp.test/sso', idp_certificates: ['not a certificate'] }, /not an X.509 certificate/],
        [{}, /give the IdP's metadata/],
        [{ idp_entity_id: 'urn:x', idp_sso_url: 'http://idp.example/sso', idp_certificates: [idp.certificate] }, /must be an https URL/],
        [{ idp_metadata_xml: idp.metadata().replace(idp.ssoUrl, 'javascript:alert(1)') }, /must be an https URL/],
        [{ idp_entity_id: 'urn:x', idp_sso_url: 'https://login.example.com@evil.example/sso', idp_certificates: [idp.certificate] }, /without credentials/],
        // The service is not on this machine: a browser it sends must not be sent to the browser's own.
        [{ idp_entity_id: 'urn:x', idp_sso_url: 'http://127.0.0.1:8080/sso', idp_certificates: [idp.certificate] }, /must be an https URL/],
        // Each certificate is tried on every response: six would make a response six times as dear.
        [{ idp_metadata_xml: withSigningCertificates(idp.metadata(), 6) }, /lists more than 5 signing certificates/]
      ]
      for (const [fields, message] of cases) {
        const answer = await h.call(owner, 'POST', path, { name: 'Bad', ...fields })
        refused(t, answer, 400, 'VALIDATION_FAILED')
        t.match(answer.json().error.details[0].message, message)
      }
      const byFields = await h.call(owner, 'POST', path, { name: 'By fields', idp_entity_id: idp.entityId, idp_sso_url: idp.ssoUrl, idp_certificates: [idp.certificate] })
      t.equal(byFields.statusCode, 201, byFields.body)
    })

    t.test('discovery routes an address through its verified domain only, or an organization by slug', async (t) => {
      const { owner, organization, domain, connection } = await h.connected()
      const discover = async (body: Record<string, unknown>) => await app.inject({ method: 'POST', url: '/api/v1/auth/sso', payload: body })
      const expected = { organization: { id: organization.id, slug: organization.slug }, connections: [{ id: connection.id, kind: 'saml', sign_in_url: connection.sign_in_url }] }
      t.match((await discover({ email: `someone@${domain.toUpperCase()}` })).json().data, expected)
      t.match((await discover({ organization: organization.slug })).json().data, expected)
      // A domain claimed but not verified routes nothing.
      const pending = uniqueDomain('pending')
      await h.call(owner, 'POST', `/organizations/${organization.id}/domains`, { domain: pending })
      refused(t, await discover({ email: `someone@${pending}` }), 404, 'NOT_FOUND', 'SSO connection not found')
      refused(t, await discover({ email: 'someone@unknown.example' }), 404, 'NOT_FOUND')
      refused(t, await discover({ email: 'someone@example.com', organization: organization.slug }), 400, 'VALIDATION_FAILED')
      refused(t, await discover({}), 400, 'VALIDATION_FAILED')
      // A connection turned off is neither discovered nor started.
      await h.call(owner, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, { enabled: false })
      refused(t, await discover({ organization: organization.slug }), 404, 'NOT_FOUND')
      const start = await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/sign-in?redirect_to=x` })
      refused(t, start, 404, 'NOT_FOUND', 'SSO connection not found')
    })

    t.test('a sign-in needs a browser application to go back to, on the allowed list, with a PKCE challenge', async (t) => {
      const { connection } = await h.connected()
      for (const query of ['', 'redirect_to=https%3A%2F%2Fevil.example%2Fcallback&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256']) {
        refused(t, await app.inject({ method: 'GET', url: `/api/v1/sso/saml/${connection.id}/sign-in?${query}` }), 400, 'VALIDATION_FAILED')
      }
      refused(t, await h.acs(connection.id, 'PHNhbWw+', 'a-state-never-issued'), 400, 'INVALID_OAUTH_STATE')
      refused(t, await h.acs(connection.id, 'A'.repeat(128 * 1024), 'state'), 413, 'PAYLOAD_TOO_LARGE', 'Request body exceeds 131072 bytes')
    })

    t.test('account claiming: an unclaimed account with the address is claimed (its password gone); a claimed one is linked', async (t) => {
      const { domain, idp, connection, spMetadata } = await h.connected()
      const planted = `carol@${domain}`
      const registered = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { email: planted, name: 'Planted', password: 'a-planted-passphrase-1' } })
      t.equal(registered.statusCode, 201)
      const { back, verifier } = await signIn(connection, idp, spMetadata, planted)
      t.equal((await h.exchange(back.searchParams.get('code') ?? '', verifier)).statusCode, 200)
      const stale = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: planted, password: 'a-planted-passphrase-1' } })
      refused(t, stale, 401, 'INVALID_CREDENTIALS')
      const claimed = await app.database.db.selectFrom('audit_logs').select('event').where('target_id', '=', registered.json().data.id).execute()
      t.ok(claimed.some((row) => row.event === 'account.claimed'), 'account.claimed')

      const dave = await createAccount(app, { name: 'Dave' })
      await app.database.db.updateTable('users').set({ email: `dave@${domain}` }).where('id', '=', dave.id).execute()
      const linked = await signIn(connection, idp, spMetadata, `dave@${domain}`)
      const token = (await h.exchange(linked.back.searchParams.get('code') ?? '', linked.verifier)).json().data.access_token
      const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })
      t.equal(me.json().data.id, dave.id, 'the existing, claimed account')
      const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: `dave@${domain}`, password: dave.password } })
      t.equal(login.statusCode, 200, 'its password still works')
    })

    t.test('an IdP of one organization never signs in an address of another\'s verified domain', async (t) => {
      const victim = await h.connected()
      const attacker = await h.connected()
      const { back } = await signIn(attacker.connection, attacker.idp, attacker.spMetadata, `owner@${victim.domain}`, ['Acme Admins'])
      t.equal(back.searchParams.get('error'), 'SSO_RESPONSE_REJECTED')
      const members = await h.call(victim.owner, 'GET', `/organizations/${victim.organization.id}/members`)
      t.notOk(members.json().data.some((member: { email: string }) => member.email === `owner@${victim.domain}`), 'nobody joined')
    })

    t.test('a domain that requires SSO refuses password sign-in for its addresses, while a connection is enabled', async (t) => {
      const { owner, admin, organization, domain, connection } = await h.connected()
      const claims = (await h.call(owner, 'GET', `/organizations/${organization.id}/domains`)).json().data
      const claim = claims.find((item: { domain: string }) => item.domain === domain)
      t.equal(claim.sso_required, false, 'not required by default')
      const staff = await createAccount(app, { name: 'Staff' })
      await app.database.db.updateTable('users').set({ email: `staff@${domain}` }).where('id', '=', staff.id).execute()
      const login = async (email: string) => await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password: staff.password } })
      t.equal((await login(`staff@${domain}`)).statusCode, 200, 'a password works before')
      refused(t, await h.call(admin, 'PATCH', `/organizations/${organization.id}/domains/${claim.id}`, { sso_required: true }), 403, 'FORBIDDEN')
      const required = await h.call(owner, 'PATCH', `/organizations/${organization.id}/domains/${claim.id}`, { sso_required: true })
      t.equal(required.json().data.sso_required, true)
      for (const email of [`staff@${domain}`, `STAFF@${domain}`, `nobody@${domain}`]) {
        refused(t, await login(email), 403, 'SSO_REQUIRED', 'This address signs in through its organization\'s identity provider')
      }
      await h.call(owner, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, { enabled: false })
      t.equal((await login(`staff@${domain}`)).statusCode, 200, 'no enabled connection: nothing to sign in through, so the password works')
    })

    t.test('the last owner keeps their role whatever the IdP\'s groups say', async (t) => {
      const { owner, organization, idp, connection, spMetadata } = await h.connected()
      const domainOfOwner = owner.email.split('@')[1] ?? ''
      await h.verifiedDomain(owner, organization.id, domainOfOwner)
      const { back } = await signIn(connection, idp, spMetadata, owner.email, [])
      t.ok(back.searchParams.get('code'), back.href)
      const members = (await h.call(owner, 'GET', `/organizations/${organization.id}/members`)).json().data
      t.equal(members.find((member: { id: string }) => member.id === owner.id)?.role, 'owner')
    })
  })
}
