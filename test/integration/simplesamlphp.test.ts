import t from 'tap'
import { claimsOf } from '../helpers/accounts.js'
import { backends, suiteName } from '../helpers/database.js'
import { appWithMail } from '../helpers/organizations.js'
import { browser, formAction, formField, planSimpleSamlPhp } from '../helpers/servers/simplesamlphp.js'
import { APPLICATION, LOCAL_SSO_ENV, SsoHarness, uniqueDomain } from '../helpers/sso.js'

/**
 * Enterprise sign-in (docs/api.md) through a real identity provider: SimpleSAMLphp 1.19 from
 * Debian on 127.0.0.1 (test/helpers/servers/simplesamlphp.ts), its pages driven by a browser
 * stand-in; the IdP's auto-posting form, which targets the service's public ACS, is handed to
 * the ACS through `app.inject`. The person lands in the organization with the role their
 * IdP group maps to. Fails, never skips, without SimpleSAMLphp: `apt-get install simplesamlphp php8.2-xml`.
 */

const ALICE = { username: 'alice', password: 'alice-pass' }

for (const backend of backends()) {
  t.test(suiteName(backend), async (t) => {
    const plannedAt = performance.now()
    const planned = await planSimpleSamlPhp(t)
    t.comment(`SimpleSAMLphp's port and key pair in ${Math.round(performance.now() - plannedAt)} ms`)
    // The outbound rule lets the service read the IdP's metadata from this machine.
    const { app, smtp } = await appWithMail(t, backend.url, { env: { ...LOCAL_SSO_ENV, SSO_METADATA_ALLOWED_NETWORKS: '127.0.0.0/8' } })
    const h = new SsoHarness(app, smtp)
    const { owner, organization } = await h.team('Acme')
    const domain = uniqueDomain()
    await h.verifiedDomain(owner, organization.id, domain)
    // The IdP's address and certificate are known before it runs; the SP it trusts once the connection exists.
    const created = await h.call(owner, 'POST', `/organizations/${organization.id}/sso-connections`, {
      name: 'Acme SimpleSAMLphp',
      idp_entity_id: planned.entityId,
      idp_sso_url: planned.ssoUrl,
      idp_certificates: [planned.certificate],
      role_mapping: { staff: 'admin' }
    })
    if (created.statusCode !== 201) throw new Error(`connection not created: ${created.body}`)
    const connection = created.json().data
    const startedAt = performance.now()
    const idp = await planned.start({
      spEntityId: connection.sp_entity_id, acsUrl: connection.acs_url, userDomain: domain
    })
    t.comment(`SimpleSAMLphp up in ${Math.round(performance.now() - startedAt)} ms`)
    // Where the real errors are: the IdP's own log.
    t.afterEach((t) => { if (!t.passing()) t.comment(`SimpleSAMLphp's log:\n${idp.log()}`) })

    const signIn = async (credentials: { username: string, password: string }) => {
      const started = await h.start(connection.id)
      const go = browser()
      const login = await go(started.location)
      const authState = formField(login.html, 'AuthState')
      if (authState === undefined) throw new Error(`no login form at ${login.url} (${login.status}): ${login.html.slice(0, 500)}`)
      return { started, login, page: await go(login.url, { ...credentials, AuthState: authState }) }
    }

    t.test('the IdP\'s own metadata, pasted into the connection, describes the same IdP', async (t) => {
      const updated = await h.call(owner, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, {
        idp_metadata_xml: idp.metadata
      })
      t.equal(updated.statusCode, 200, updated.body)
      t.match(updated.json().data, {
        idp_entity_id: 'urn:test:idp', idp_sso_url: idp.ssoUrl, idp_certificate_fingerprints: connection.idp_certificate_fingerprints
      })
    })

    t.test('the IdP\'s metadata URL, given instead, is read by the service: the same IdP again', async (t) => {
      const updated = await h.call(owner, 'PATCH', `/organizations/${organization.id}/sso-connections/${connection.id}`, {
        idp_metadata_url: `${idp.url}/saml2/idp/metadata.php`
      })
      t.equal(updated.statusCode, 200, updated.body)
      t.match(updated.json().data, {
        idp_entity_id: 'urn:test:idp',
        idp_sso_url: idp.ssoUrl,
        idp_certificate_fingerprints: connection.idp_certificate_fingerprints,
        idp_metadata_url: `${idp.url}/saml2/idp/metadata.php`
      })
    })

    t.test('alice signs in at the IdP: her account is made, and she joins with the role her group maps to', async (t) => {
      const began = performance.now()
      const { started, login, page } = await signIn(ALICE)
      t.ok(started.location.startsWith(`${idp.ssoUrl}?SAMLRequest=`), 'to the IdP, HTTP-Redirect')
      t.ok(login.url.startsWith(`${idp.url}/module.php/core/loginuserpass.php?`), `the IdP's login form: ${login.url}`)
      t.equal(page.status, 200)
      t.equal(formAction(page.html), connection.acs_url, 'the IdP posts to the connection\'s ACS')
      const samlResponse = formField(page.html, 'SAMLResponse')
      const relayState = formField(page.html, 'RelayState')
      if (samlResponse === undefined) throw new Error(`no SAMLResponse in the IdP's page: ${page.html.slice(0, 500)}`)
      t.equal(relayState, started.relayState, 'the RelayState back as sent')
      const xml = Buffer.from(samlResponse, 'base64').toString('utf8')
      t.match(xml, `Destination="${connection.acs_url}"`)
      t.match(xml, `InResponseTo="${started.requestId}"`)

      const back = SsoHarness.back(await h.acs(connection.id, samlResponse, relayState ?? ''))
      t.equal(`${back.origin}${back.pathname}`, APPLICATION)
      const code = back.searchParams.get('code')
      t.ok(code, `a one-time code: ${back.href}`)
      const exchanged = await h.exchange(code ?? '', started.verifier)
      t.comment(`one sign-in through SimpleSAMLphp in ${Math.round(performance.now() - began)} ms`)
      t.equal(exchanged.statusCode, 200, exchanged.body)
      const token: string = exchanged.json().data.access_token
      t.same(claimsOf(token).amr, ['fed'])

      const email = `alice@${domain}`
      const me = await app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } })
      t.equal(me.statusCode, 200, me.body)
      t.match(me.json().data, { email, name: 'Alice Example', email_verified: true })
      const members = await h.call(owner, 'GET', `/organizations/${organization.id}/members?search=${encodeURIComponent(email)}`)
      t.equal(members.statusCode, 200, members.body)
      t.match(members.json().data.filter((member: { email: string }) => member.email === email), [{ email, role: 'admin' }],
        'a member, as admin: her eduPersonAffiliation staff maps to it')
    })

    t.test('IdP-initiated: alice starts at the IdP; the service sends her to the application, whose sign-in the IdP answers at once', async (t) => {
      const loginUrl = `${APPLICATION}/sso`
      const path = `/organizations/${organization.id}/sso-connections/${connection.id}`
      t.equal((await h.call(owner, 'PATCH', path, { idp_initiated_login_url: loginUrl })).statusCode, 200)
      const go = browser()
      // SimpleSAMLphp's IdP-first flow: its SSO URL with the service provider's entity ID, and no AuthnRequest.
      const login = await go(`${idp.ssoUrl}?spentityid=${encodeURIComponent(connection.sp_entity_id)}`)
      const authState = formField(login.html, 'AuthState')
      if (authState === undefined) throw new Error(`no login form at ${login.url} (${login.status}): ${login.html.slice(0, 500)}`)
      const posted = await go(login.url, { ...ALICE, AuthState: authState })
      const unsolicited = formField(posted.html, 'SAMLResponse')
      if (unsolicited === undefined) throw new Error(`no SAMLResponse in the IdP's page: ${posted.html.slice(0, 500)}`)
      t.notMatch(Buffer.from(unsolicited, 'base64').toString('utf8'), /InResponseTo=/, 'a response to no request')
      const bounce = SsoHarness.back(await h.acs(connection.id, unsolicited, formField(posted.html, 'RelayState') ?? ''))
      t.equal(bounce.href, `${loginUrl}?connection_id=${connection.id}`, 'to the application\'s login URL, signed in nowhere')

      // The application starts a sign-in through the connection: the IdP, where alice is signed in, answers at once.
      const started = await h.start(connection.id)
      const page = await go(started.location)
      t.equal(formField(page.html, 'AuthState'), undefined, 'no login form: the IdP\'s session answers')
      const samlResponse = formField(page.html, 'SAMLResponse')
      if (samlResponse === undefined) throw new Error(`no SAMLResponse in the IdP's page: ${page.html.slice(0, 500)}`)
      const back = SsoHarness.back(await h.acs(connection.id, samlResponse, formField(page.html, 'RelayState') ?? ''))
      const exchanged = await h.exchange(back.searchParams.get('code') ?? '', started.verifier)
      t.equal(exchanged.statusCode, 200, exchanged.body)
      t.same(claimsOf(exchanged.json().data.access_token).amr, ['fed'])
    })

    t.test('a wrong password stays on the IdP\'s login form: no response for the service', async (t) => {
      const { page } = await signIn({ ...ALICE, password: 'not-her-password' })
      t.equal(page.status, 200)
      t.equal(formField(page.html, 'SAMLResponse'), undefined, 'no SAMLResponse')
      t.ok(formField(page.html, 'AuthState'), 'the login form again')
      t.match(page.html, /Incorrect username or password/)
    })
  })
}
